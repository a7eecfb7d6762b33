package budget

// ring is a double-ended queue over a buffer of fixed size, the store of a
// [Queue]: items enter at the back and leave from either end. Popped slots
// are cleared so that the items they held can be collected.
type ring[T any] struct {
	buf     []T
	head, n int
}

func (r *ring[T]) front() T { return r.buf[r.head] }

func (r *ring[T]) pushBack(v T) {
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

func (r *ring[T]) popFront() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v
}

func (r *ring[T]) popBack() T {
	var zero T
	i := (r.head + r.n - 1) % len(r.buf)
	v := r.buf[i]
	r.buf[i] = zero
	r.n--
	return v
}

// at returns the k-th item from the front.
func (r *ring[T]) at(k int) T { return r.buf[(r.head+k)%len(r.buf)] }

// removeAt takes the k-th item from the front out of the ring, moving the
// ones behind it forward.
func (r *ring[T]) removeAt(k int) T {
	var zero T
	v := r.at(k)
	for j := k; j < r.n-1; j++ {
		r.buf[(r.head+j)%len(r.buf)] = r.buf[(r.head+j+1)%len(r.buf)]
	}
	r.buf[(r.head+r.n-1)%len(r.buf)] = zero
	r.n--
	return v
}
