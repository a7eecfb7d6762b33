package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Limits on values, so that nothing downstream overflows or runs for ever.
const (
	// MaxDuration is the largest duration a file may declare.
	MaxDuration = time.Hour
	// MaxRetries is the largest retries a call may declare.
	MaxRetries = 100
	// MaxWorkers is the largest workers a service may declare.
	MaxWorkers = 1_000_000
	// MaxServices is the largest number of services a file may declare.
	MaxServices = 100_000
	// MaxCalls is the largest number of calls one service may make.
	MaxCalls = 10_000
	// MaxFallbacks is the largest number of fallbacks one call may list.
	MaxFallbacks = 100
	// MaxTotalCalls is the largest number of calls all the services of a
	// file may make together, each fallback counted as one more call. The
	// bounds per service and per call alone would allow 10¹¹.
	MaxTotalCalls = 1_000_000
	// MaxNodes is the largest number of YAML nodes (scalars, lists and
	// mappings) a file may hold, with every alias counted as a copy of what
	// it names. It is counted before anything is decoded, so a small file
	// whose aliases name aliases (an alias bomb) is refused in linear time.
	MaxNodes = 5_000_000
	// MaxFileSize is the largest file ReadFile and Parse accept, in bytes.
	MaxFileSize = 16 << 20
)

// Parse reads a topology from data, which came from the file named file
// (used only in error messages), and validates it. The error, when not nil,
// is an *Error. Parse is safe on any input: it never panics, and its time
// and memory are linear in len(data), at most MaxFileSize bytes: aliases
// are counted against MaxNodes before anything is decoded.
func Parse(file string, data []byte) (*Topology, error) {
	p := &parser{file: file}
	if len(data) > MaxFileSize {
		return nil, p.errAt(Pos{1, 1}, "file is larger than %d MiB", MaxFileSize>>20)
	}
	// Counted on the raw bytes first: the decoder's own cost is about 250
	// bytes a node, 1 to 2 GB for a 16 MiB file of tiny ones.
	if err := p.scanNodes(data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errAt(Pos{1, 1}, "empty file: want entry, budget and services")
		}
		return nil, p.yamlError(err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, p.errAt(Pos{1, 1}, "empty file: want entry, budget and services")
	}
	// A second document would otherwise be silently ignored.
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, p.yamlError(err)
		}
		return nil, p.errf(&more, "a second YAML document; a topology file holds one")
	}
	if err := p.countNodes(&doc); err != nil {
		return nil, err
	}
	t, err := p.top(doc.Content[0])
	if err != nil {
		return nil, err
	}
	if err := p.checkSums(t); err != nil {
		return nil, err
	}
	return t, nil
}

type parser struct {
	file string
	// calls counts the calls and fallbacks read so far, against
	// MaxTotalCalls.
	calls int
	// callees records where each call's callee is named, to check the names
	// once every service is known.
	refs []ref
}

type ref struct {
	name string
	node *yaml.Node
	what string
}

func (p *parser) errAt(pos Pos, format string, args ...any) *Error {
	return &Error{File: p.file, Pos: Pos{max(pos.Line, 1), max(pos.Col, 1)}, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) *Error {
	return p.errAt(pos(n), format, args...)
}

func pos(n *yaml.Node) Pos { return Pos{n.Line, n.Column} }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns the YAML library's syntax error into an *Error. The
// library reports a line but no column for syntax errors; column 1 stands in.
func (p *parser) yamlError(err error) *Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return p.errAt(Pos{line, 1}, "bad YAML: %s", m[2])
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	return p.errAt(Pos{1, 1}, "bad YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// fields walks a mapping node, calling set for each key in order, and
// rejects keys that are not in known, duplicate keys and non-string keys.
func (p *parser) fields(n *yaml.Node, what string, known []string, set func(key string, v *yaml.Node) error) error {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return p.errf(orNode(n), "%s must be a mapping", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k == nil || v == nil {
			return p.errf(n, "bad %s", what)
		}
		if k.Kind != yaml.ScalarNode {
			return p.errf(k, "%s: keys must be names", what)
		}
		if seen[k.Value] {
			return p.errf(k, "%s: %q appears twice", what, k.Value)
		}
		seen[k.Value] = true
		if known != nil && !contains(known, k.Value) {
			return p.errf(k, "%s: unknown field %q (known: %s)", what, k.Value, strings.Join(known, ", "))
		}
		if err := set(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

func orNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Line: 1, Column: 1}
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) top(root *yaml.Node) (*Topology, error) {
	t := &Topology{Services: map[string]*Service{}}
	var entry, budget, services *yaml.Node
	err := p.fields(root, "the file", []string{"entry", "budget", "services"}, func(key string, v *yaml.Node) error {
		switch key {
		case "entry":
			entry = v
		case "budget":
			budget = v
		case "services":
			services = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if services == nil {
		return nil, p.errf(root, "missing services")
	}
	if err := p.services(t, services); err != nil {
		return nil, err
	}
	if entry == nil {
		return nil, p.errf(root, "missing entry: name the service a request enters at")
	}
	name, err := p.name(entry, "entry")
	if err != nil {
		return nil, err
	}
	if _, ok := t.Services[name]; !ok {
		return nil, p.errf(entry, "entry: unknown service %q", name)
	}
	t.Entry = name
	if budget == nil {
		return nil, p.errf(root, "missing budget: how long a user waits at the entry, such as 3s")
	}
	if t.Budget, err = p.duration(budget, "budget", false); err != nil {
		return nil, err
	}
	for _, r := range p.refs {
		s, ok := t.Services[r.name]
		if !ok {
			return nil, p.errf(r.node, "%s: unknown service %q", r.what, r.name)
		}
		if strings.HasSuffix(r.what, ": host") && s.Host != "" {
			return nil, p.errf(r.node, "%s: %q itself runs on %q; name %q", r.what, r.name, s.Host, s.Host)
		}
	}
	for _, name := range t.Names {
		if s := t.Services[name]; s.Host == name {
			return nil, p.errAt(s.Pos, "service %q names itself as its host", name)
		}
	}
	return t, nil
}

func (p *parser) services(t *Topology, n *yaml.Node) error {
	n = resolve(n)
	if n != nil && n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		return p.errf(n, "services: none declared")
	}
	return p.fields(n, "services", nil, func(key string, v *yaml.Node) error {
		if len(t.Names) >= MaxServices {
			return p.errf(v, "more than %d services", MaxServices)
		}
		if err := checkName(key); err != nil {
			return p.errf(v, "service name %q: %v", key, err)
		}
		s := &Service{Name: key, Pos: pos(v)}
		// A service with nothing to declare may be written as "db:" or "db: {}".
		if v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == "") {
			t.Services[key], t.Names = s, append(t.Names, key)
			return nil
		}
		if err := p.service(s, v); err != nil {
			return err
		}
		t.Services[key], t.Names = s, append(t.Names, key)
		return nil
	})
}

func (p *parser) service(s *Service, n *yaml.Node) error {
	what := "service " + s.Name
	return p.fields(n, what, []string{"latency", "calls", "workers", "host", "cancellable"}, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "latency":
			s.Latency, err = p.latency(v, what+": latency")
		case "workers":
			s.Workers, err = p.integer(v, what+": workers", 1, MaxWorkers)
		case "host":
			s.Host, err = p.name(v, what+": host")
			if err == nil {
				p.refs = append(p.refs, ref{s.Host, v, what + ": host"})
			}
		case "cancellable":
			s.Cancellable, err = p.boolean(v, what+": cancellable")
		case "calls":
			var known time.Duration
			v = resolve(v)
			if v.Kind != yaml.SequenceNode {
				return p.errf(v, "%s: calls must be a list", what)
			}
			if len(v.Content) > MaxCalls {
				return p.errf(v, "%s: more than %d calls", what, MaxCalls)
			}
			for _, c := range v.Content {
				if p.calls++; p.calls > MaxTotalCalls {
					return p.errf(orNode(resolve(c)), "%s: more than %d calls in the file, fallbacks counted", what, MaxTotalCalls)
				}
				call, err := p.call(resolve(c), what)
				if err != nil {
					return err
				}
				s.Calls = append(s.Calls, call)
				// What is known of the calls' worst case before the time
				// the service is given is (calls without a timeout count
				// zero) already refuses a file made to overflow, before
				// the rest of its calls take memory; checkSums completes
				// the check.
				var ok bool
				if known, ok = addSum(known, WorstCall(call, 0)); !ok {
					return p.errAt(call.Pos, sequenceTooLong, s.Name, sumText)
				}
			}
		}
		return err
	})
}

func (p *parser) call(n *yaml.Node, what string) (Call, error) {
	c := Call{Pos: pos(orNode(n)), Share: 1}
	what += ": call"
	var to *yaml.Node
	err := p.fields(n, what, []string{"to", "timeout", "retries", "backoff", "share", "fallback"}, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "to":
			to = v
			c.To, err = p.name(v, what+": to")
		case "timeout":
			if s, serr := p.scalar(v, what+": timeout"); serr == nil && strings.TrimSpace(s) == "budget" {
				c.Budget = true
				return nil
			}
			c.Timeout, err = p.duration(v, what+": timeout", false)
		case "retries":
			c.Retries, err = p.integer(v, what+": retries", 0, MaxRetries)
		case "backoff":
			c.Backoff, err = p.duration(v, what+": backoff", true)
		case "share":
			c.Share, err = p.share(v, what+": share")
		case "fallback":
			v = resolve(v)
			if v.Kind != yaml.SequenceNode {
				return p.errf(v, "%s: fallback must be a list", what)
			}
			if len(v.Content) > MaxFallbacks {
				return p.errf(v, "%s: more than %d fallbacks", what, MaxFallbacks)
			}
			for _, f := range v.Content {
				if p.calls++; p.calls > MaxTotalCalls {
					return p.errf(orNode(resolve(f)), "%s: more than %d calls in the file, fallbacks counted", what, MaxTotalCalls)
				}
				fb, err := p.fallback(resolve(f), what+": fallback")
				if err != nil {
					return err
				}
				c.Fallback = append(c.Fallback, fb)
			}
		}
		return err
	})
	if err != nil {
		return c, err
	}
	if to == nil {
		return c, p.errf(n, "%s: missing to: name the callee", what)
	}
	p.refs = append(p.refs, ref{c.To, to, what + ": to"})
	return c, nil
}

func (p *parser) fallback(n *yaml.Node, what string) (Fallback, error) {
	f := Fallback{Pos: pos(orNode(n))}
	var to *yaml.Node
	err := p.fields(n, what, []string{"to", "timeout", "local", "latency"}, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "to":
			to = v
			f.To, err = p.name(v, what+": to")
		case "timeout":
			f.Timeout, err = p.duration(v, what+": timeout", false)
		case "local":
			f.Local, err = p.name(v, what+": local")
		case "latency":
			f.Latency, err = p.latency(v, what+": latency")
		}
		return err
	})
	if err != nil {
		return f, err
	}
	switch {
	case (to == nil) == (f.Local == ""):
		return f, p.errf(n, "%s: give exactly one of to (a service) or local (such as cache)", what)
	case to != nil && !f.Latency.IsZero():
		return f, p.errf(n, "%s: latency belongs to the service %q, not to the fallback", what, f.To)
	case to == nil && f.Timeout != 0:
		return f, p.errf(n, "%s: a local fallback takes no timeout", what)
	}
	if to != nil {
		p.refs = append(p.refs, ref{f.To, to, what + ": to"})
	}
	return f, nil
}

func (p *parser) latency(n *yaml.Node, what string) (Latency, error) {
	var l Latency
	var p50, p99 *yaml.Node
	err := p.fields(n, what, []string{"p50", "p99"}, func(key string, v *yaml.Node) error {
		d, err := p.duration(v, what+": "+key, false)
		if key == "p50" {
			l.P50, p50 = d, v
		} else {
			l.P99, p99 = d, v
		}
		return err
	})
	if err != nil {
		return l, err
	}
	if p50 == nil || p99 == nil {
		return l, p.errf(resolve(n), "%s: give both p50 and p99", what)
	}
	if l.P99 < l.P50 {
		return l, p.errf(p99, "%s: p99 %s is below p50 %s", what, l.P99, l.P50)
	}
	return l, nil
}

func (p *parser) scalar(n *yaml.Node, what string) (string, error) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", p.errf(orNode(n), "%s: want a single value", what)
	}
	return n.Value, nil
}

func (p *parser) name(n *yaml.Node, what string) (string, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return "", err
	}
	if err := checkName(s); err != nil {
		return "", p.errf(n, "%s: name %q: %v", what, s, err)
	}
	return s, nil
}

// duration parses a Go duration such as 150ms or 2s. Zero is allowed only
// when zeroOK; negative values, bare numbers and values over MaxDuration
// never are.
func (p *parser) duration(n *yaml.Node, what string, zeroOK bool) (time.Duration, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return 0, err
	}
	d, perr := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case perr != nil:
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
			return 0, p.errf(n, "%s: %q has no unit; write it as %sms or %ss", what, s, s, s)
		}
		if s == "0" && zeroOK {
			return 0, nil
		}
		return 0, p.errf(n, "%s: %q is not a duration such as 150ms or 2s", what, s)
	case d < 0:
		return 0, p.errf(n, "%s: %s is negative", what, d)
	case d == 0 && !zeroOK:
		return 0, p.errf(n, "%s: must be more than zero", what)
	case d > MaxDuration:
		return 0, p.errf(n, "%s: %s is more than %s", what, d, MaxDuration)
	}
	return d, nil
}

func (p *parser) integer(n *yaml.Node, what string, lo, hi int) (int, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil {
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && !math.IsNaN(f) {
			return 0, p.errf(n, "%s: %q is not a whole number", what, s)
		}
		return 0, p.errf(n, "%s: %q is not a number", what, s)
	}
	if v < int64(lo) || v > int64(hi) {
		return 0, p.errf(n, "%s: %d is outside [%d, %d]", what, v, lo, hi)
	}
	return int(v), nil
}

func (p *parser) share(n *yaml.Node, what string) (float64, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseFloat(s, 64)
	if perr != nil || math.IsNaN(v) || v <= 0 || v > 1 {
		return 0, p.errf(n, "%s: %q is not a fraction in (0, 1]", what, s)
	}
	return v, nil
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return false, err
	}
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, p.errf(n, "%s: %q is not true or false", what, s)
}
