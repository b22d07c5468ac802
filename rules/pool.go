package rules

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"

	"modernc.org/quickjs"
)

// pool keeps loaded VMs per script version under one cap on the VMs alive
// across all versions, busy or idle. When the cap is reached a new version
// takes the place of the least recently used idle VM; when every VM is
// busy, callers wait for one to come back.
type pool struct {
	max int

	mu     sync.Mutex
	live   int
	idle   map[[sha256.Size]byte][]*pooledVM
	lru    list.List     // idle VMs, most recently returned first
	freed  chan struct{} // closed (and replaced) whenever a VM comes back or goes
	closed bool
}

// pooledVM is a VM loaded with one script version, used by one caller at a
// time.
type pooledVM struct {
	js   *quickjs.VM
	call quickjs.Value // the script's wrapped entry function, kept so a call parses nothing
	key  [sha256.Size]byte
	el   *list.Element // in lru while idle
}

func (v *pooledVM) close() {
	v.call.Free()
	v.js.Close()
}

func newPool(max int) *pool {
	return &pool{max: max, idle: map[[sha256.Size]byte][]*pooledVM{}, freed: make(chan struct{})}
}

// get returns an idle VM of version key, or one made by create.
func (p *pool) get(ctx context.Context, key [sha256.Size]byte, create func() (*pooledVM, error)) (*pooledVM, error) {
	for {
		p.mu.Lock()
		if vms := p.idle[key]; len(vms) > 0 {
			v := vms[len(vms)-1]
			p.unidle(v)
			p.mu.Unlock()
			return v, nil
		}
		var victim *pooledVM
		if p.live >= p.max {
			if back := p.lru.Back(); back != nil {
				victim = back.Value.(*pooledVM)
				p.unidle(victim)
				p.live--
			}
		}
		if p.live < p.max {
			p.live++
			p.mu.Unlock()
			if victim != nil {
				victim.close()
			}
			v, err := create()
			if err != nil {
				p.gone()
				return nil, err
			}
			v.key = key
			return v, nil
		}
		wait := p.freed
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// put returns v to the pool, or closes it when keep is false: a VM that hit
// a limit is never reused.
func (p *pool) put(v *pooledVM, keep bool) {
	p.mu.Lock()
	if !keep || p.closed {
		p.mu.Unlock()
		v.close()
		p.gone()
		return
	}
	v.el = p.lru.PushFront(v)
	p.idle[v.key] = append(p.idle[v.key], v)
	p.signal()
	p.mu.Unlock()
}

// gone accounts for a VM that was closed or never made.
func (p *pool) gone() {
	p.mu.Lock()
	p.live--
	p.signal()
	p.mu.Unlock()
}

// unidle takes v out of the idle lists; p.mu is held.
func (p *pool) unidle(v *pooledVM) {
	p.lru.Remove(v.el)
	v.el = nil
	vms := p.idle[v.key]
	for i, w := range vms {
		if w == v {
			vms = append(vms[:i], vms[i+1:]...)
			break
		}
	}
	if len(vms) == 0 {
		delete(p.idle, v.key)
	} else {
		p.idle[v.key] = vms
	}
}

// signal wakes every caller waiting for room; p.mu is held.
func (p *pool) signal() {
	close(p.freed)
	p.freed = make(chan struct{})
}

func (p *pool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}

// close frees the idle VMs; busy ones are freed as they come back.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	var idle []*pooledVM
	for el := p.lru.Front(); el != nil; el = el.Next() {
		idle = append(idle, el.Value.(*pooledVM))
	}
	for _, v := range idle {
		p.unidle(v)
	}
	p.live -= len(idle)
	p.signal()
	p.mu.Unlock()
	for _, v := range idle {
		v.close()
	}
}
