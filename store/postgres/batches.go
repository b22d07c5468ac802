package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// batches is a queue whose takers each wait for one request, take what
// else waits, up to most, and handle it together: a lone request goes at
// once, and those that arrive while a batch is committing share the next.
// The ingest commits and the call settles run on one each.
type batches[T any] struct {
	ch   chan T
	most int
}

func newBatches[T any](most, queued int) batches[T] {
	return batches[T]{ch: make(chan T, queued), most: most}
}

// put queues r, unless the store stops or ctx ends first.
func (q batches[T]) put(ctx context.Context, stop <-chan struct{}, r T) error {
	select {
	case q.ch <- r:
		return nil
	case <-stop:
		return classify(errClosed)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run takes batches and hands each to handle until stop closes.
func (q batches[T]) run(stop <-chan struct{}, handle func([]T)) {
	batch := make([]T, 0, q.most)
	for {
		batch = batch[:0]
		select {
		case r := <-q.ch:
			batch = append(batch, r)
		case <-stop:
			return
		}
	more:
		for len(batch) < q.most {
			select {
			case r := <-q.ch:
				batch = append(batch, r)
			default:
				break more
			}
		}
		handle(batch)
	}
}

// drain hands what is left queued to f, one request at a time.
func (q batches[T]) drain(f func(T)) {
	for {
		select {
		case r := <-q.ch:
			f(r)
		default:
			return
		}
	}
}

// forCustomPlans has the rest of a batch's transaction planned for the
// arrays it is given. A plan cached for any array of keys guesses ten, and
// through a busy pipeline it settled markedly fewer webhooks a second than
// plans made for each batch, whose cost the batch shares.
func forCustomPlans(b *pgx.Batch) {
	b.Queue(`SET LOCAL plan_cache_mode = force_custom_plan`)
}
