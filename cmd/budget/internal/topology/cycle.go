package topology

// Cycle returns the first cycle of calls found by a depth-first walk of the
// services in declaration order, as the list of services along it with the
// first repeated at the end (a, b, a), and the position of the call that
// closes it. Calls made by fallbacks count. It returns nil when the graph
// has no cycle.
func (t *Topology) Cycle() ([]string, Pos) {
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int, len(t.Names))
	var path []string
	var found []string
	var at Pos
	// visit is recursive; the depth is bounded by the number of services.
	var visit func(name string) bool
	visit = func(name string) bool {
		state[name] = onPath
		path = append(path, name)
		for _, c := range t.Services[name].Calls {
			for _, to := range c.Callees() {
				switch state[to] {
				case onPath:
					i := len(path) - 1
					for path[i] != to {
						i--
					}
					found = append(append([]string{}, path[i:]...), to)
					at = c.Pos
					return true
				case unseen:
					if visit(to) {
						return true
					}
				}
			}
		}
		path = path[:len(path)-1]
		state[name] = done
		return false
	}
	for _, name := range t.Names {
		if state[name] == unseen && visit(name) {
			return found, at
		}
	}
	return nil, Pos{}
}

// Order returns the services reachable from the entry with every caller
// before its callees, or ok false when they form a cycle.
func (t *Topology) Order() (order []string, ok bool) {
	if c, _ := t.Cycle(); c != nil {
		return nil, false
	}
	seen := map[string]bool{}
	var post []string
	var visit func(name string)
	visit = func(name string) {
		seen[name] = true
		for _, c := range t.Services[name].Calls {
			for _, to := range c.Callees() {
				if !seen[to] {
					visit(to)
				}
			}
		}
		post = append(post, name)
	}
	visit(t.Entry)
	for i, j := 0, len(post)-1; i < j; i, j = i+1, j-1 {
		post[i], post[j] = post[j], post[i]
	}
	return post, true
}
