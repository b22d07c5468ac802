// Package notify wakes the goroutines of one process when work commits:
// a coalescing broadcast per topic. Stores use it for in-process wake-ups
// (PostgreSQL adds LISTEN/NOTIFY across processes on top).
package notify

import "sync"

// Hub broadcasts topic notifications to its listeners.
type Hub struct {
	mu        sync.Mutex
	listeners map[string]map[chan struct{}]struct{}
}

// Notify wakes every listener of topic. A listener that has not yet taken
// the previous wake-up gets one, not two.
func (h *Hub) Notify(topic string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.listeners[topic] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Listen returns a channel woken on topic and a function that stops it.
func (h *Hub) Listen(topic string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.listeners == nil {
		h.listeners = map[string]map[chan struct{}]struct{}{}
	}
	if h.listeners[topic] == nil {
		h.listeners[topic] = map[chan struct{}]struct{}{}
	}
	h.listeners[topic][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.listeners[topic], ch)
		h.mu.Unlock()
	}
}
