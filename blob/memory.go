package blob

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/intakehq/intake"
)

// Memory keeps objects in memory, for tests: it can be taken down and
// brought back like a real store.
type Memory struct {
	Clock intake.Clock // stamps objects; nil: the system clock

	mu      sync.Mutex
	objects map[string]memObject
	down    bool
}

type memObject struct {
	data     []byte
	modified time.Time
}

// ErrDown is what a Memory store that is down answers.
var ErrDown = errors.New("blob: the memory store is down")

// SetDown makes every call fail (true) or work again (false).
func (m *Memory) SetDown(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

// Keys lists the keys held, in order.
func (m *Memory) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.objects))
	for k := range m.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (m *Memory) now() time.Time {
	if m.Clock == nil {
		return time.Now()
	}
	return m.Clock.Now()
}

func (m *Memory) check() error {
	if m.down {
		return unavailable(ErrDown)
	}
	return nil
}

// Put stores what body holds.
func (m *Memory) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	m.mu.Lock()
	err := m.check()
	m.mu.Unlock()
	if err != nil {
		return err
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	if size >= 0 && int64(len(data)) != size {
		return unavailable(errors.New("blob: body length differs from its size"))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	if m.objects == nil {
		m.objects = map[string]memObject{}
	}
	m.objects[key] = memObject{data: data, modified: m.now()}
	return nil
}

// Open reads the object under key.
func (m *Memory) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return nil, 0, err
	}
	o, ok := m.objects[key]
	if !ok {
		return nil, 0, intake.Errorf(intake.ENOTFOUND, "no object %s", key)
	}
	return io.NopCloser(bytes.NewReader(o.data)), int64(len(o.data)), nil
}

// Delete deletes the objects under keys.
func (m *Memory) Delete(ctx context.Context, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	for _, k := range keys {
		delete(m.objects, k)
	}
	return nil
}

// List lists objects whose keys sort after after and before before.
func (m *Memory) List(ctx context.Context, after, before string, limit int) ([]intake.BlobObject, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return nil, err
	}
	var out []intake.BlobObject
	for k, o := range m.objects {
		if k > after && k < before {
			out = append(out, intake.BlobObject{Key: k, Size: int64(len(o.data)), Modified: o.modified})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
