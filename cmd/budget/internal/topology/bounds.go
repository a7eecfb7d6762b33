package topology

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// countNodes refuses a document that holds more than MaxNodes nodes with
// its aliases expanded, and one whose alias names a node that contains the
// alias. The size of each anchored node is computed once, so the count is
// linear in the size of the document as written, however much its aliases
// would expand to.
func (p *parser) countNodes(doc *yaml.Node) error {
	c := &nodeCounter{p: p, size: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}}
	_, err := c.count(doc)
	return err
}

type nodeCounter struct {
	p *parser
	// size holds the expanded size of every anchored node counted so far;
	// only those can be reached twice.
	size map[*yaml.Node]int
	// open holds the anchored nodes being counted, to catch an alias to an
	// enclosing node.
	open map[*yaml.Node]bool
}

// count returns n's size with aliases expanded. It stops, with an error
// at the node that crossed the bound, as soon as the size passes MaxNodes,
// so no count overflows. The recursion is as deep as the document is
// nested; the YAML parser limits that depth.
func (c *nodeCounter) count(n *yaml.Node) (int, error) {
	if n == nil {
		return 0, nil
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1, nil
		}
		if c.open[n.Alias] {
			return 0, c.p.errf(n, "alias *%s names a node that contains it", n.Value)
		}
		return c.count(n.Alias)
	}
	if n.Anchor != "" {
		if s, ok := c.size[n]; ok {
			return s, nil
		}
		c.open[n] = true
		defer delete(c.open, n)
	}
	total := 1
	for _, child := range n.Content {
		s, err := c.count(child)
		if err != nil {
			return 0, err
		}
		if total += s; total > MaxNodes {
			return 0, c.p.errf(child, "with its aliases expanded the file holds more than %d YAML nodes (an alias counts as a copy of what it names)", MaxNodes)
		}
	}
	if n.Anchor != "" {
		c.size[n] = total
	}
	return total, nil
}

// checkSums refuses a topology in which a sum of durations a consumer
// makes would pass MaxSum: a service's calls made one after another in the
// worst case, or a service's p99 with its callees' (the typical tail audit
// compares timeouts with). The sums are checked as they are made, so none
// overflows, and each service is summed once: linear in the topology.
func (p *parser) checkSums(t *Topology) error {
	// A call without a timeout runs for as long as its caller is given,
	// which is the budget or some call's timeout: at most the largest.
	given := t.Budget
	for _, name := range t.Names {
		for _, c := range t.Services[name].Calls {
			given = max(given, c.Timeout)
			for _, f := range c.Fallback {
				given = max(given, f.Timeout)
			}
		}
	}
	for _, name := range t.Names {
		s := t.Services[name]
		var total time.Duration
		for _, c := range s.Calls {
			var ok bool
			if total, ok = addSum(total, WorstCall(c, given)); !ok {
				return p.errAt(c.Pos, sequenceTooLong, name, sumText)
			}
		}
	}
	tails := &tailSums{t: t, sum: make(map[string]time.Duration, len(t.Names)), open: map[string]bool{}}
	for _, name := range t.Names {
		if _, err := tails.of(p, name); err != nil {
			return err
		}
	}
	return nil
}

// tailSums computes each service's p99 plus its callees' (not its
// fallbacks'), as audit does; a callee already on the path counts as zero.
type tailSums struct {
	t    *Topology
	sum  map[string]time.Duration
	open map[string]bool
}

func (ts *tailSums) of(p *parser, name string) (time.Duration, error) {
	if d, ok := ts.sum[name]; ok {
		return d, nil
	}
	if ts.open[name] {
		return 0, nil
	}
	ts.open[name] = true
	s := ts.t.Services[name]
	d := s.Latency.P99
	for _, c := range s.Calls {
		sub, err := ts.of(p, c.To)
		if err != nil {
			return 0, err
		}
		var ok bool
		if d, ok = addSum(d, sub); !ok {
			return 0, p.errAt(c.Pos, "service %s: its p99 with its callees' adds up to more than %s", name, sumText)
		}
	}
	ts.open[name] = false
	ts.sum[name] = d
	return d, nil
}
