package postgres

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestOperatorReadsRunOnTheirOwnPoolWithinTheirStatementTimeoutAndNeverTakeThePipelines:
// operators' reads hold every connection of their pool, and the pipeline's
// reads and writes go on through the main pool all the same; a read
// statement past its statement_timeout is stopped by the server.
func TestOperatorReadsRunOnTheirOwnPoolWithinTheirStatementTimeoutAndNeverTakeThePipelines(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, Options{URL: pgtest.Database(t), MaxConns: 4, ReadConns: 2, ReadTimeout: 300 * time.Millisecond})

	// A statement past the read pool's timeout is stopped by the server.
	slow := intake.OperatorRead(ctx)
	err := s.read(slow, intake.Scope{}, func(b *pgx.Batch) { b.Queue(`SELECT pg_sleep(30)`) })
	if err == nil {
		t.Fatal("a 30 s statement on the operators' pool ran to its end")
	}
	// The read pool is read only.
	err = s.read(slow, intake.Scope{}, func(b *pgx.Batch) { b.Queue(`CREATE TABLE t_reads (x int)`) })
	if err == nil {
		t.Fatal("the operators' pool wrote")
	}

	// Both operator connections held: a pipeline read and an ingest go on.
	held, release := context.WithCancel(intake.OperatorRead(ctx))
	defer release()
	started := make(chan struct{}, 2)
	for range 2 {
		go func() {
			conn, err := s.reads.Acquire(held)
			if err != nil {
				started <- struct{}{}
				return
			}
			defer conn.Release()
			started <- struct{}{}
			<-held.Done()
		}()
	}
	<-started
	<-started
	if got := s.reads.Stat().AcquiredConns(); got != 2 {
		t.Fatalf("operators' pool: %d connections held, want both", got)
	}
	o := newOrg(t, s, "acme")
	m := &intake.Message{ID: intake.NewID(), OrgID: o.org.ID, ConnectionID: o.conn.ID, EndpointID: o.ep.ID, Method: "POST",
		ReceivedAt: t0, State: intake.MessageQueued, MaxAttempts: 3, NextAttemptAt: t0, Body: []byte(`{}`)}
	pipeline, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Ingest(pipeline, m); err != nil {
		t.Fatalf("an ingest while operators hold their pool: %v", err)
	}
	if _, err := s.Message(pipeline, intake.Scope{}, m.ID); err != nil {
		t.Fatalf("a pipeline read while operators hold their pool: %v", err)
	}
	// And an operator's read waits for its own pool, not the pipeline's.
	waiting, cancelWait := context.WithTimeout(intake.OperatorRead(ctx), 100*time.Millisecond)
	defer cancelWait()
	if _, err := s.Message(waiting, intake.Scope{}, m.ID); err == nil {
		t.Fatal("an operator's read ran while its pool was all held: it took a pipeline connection")
	}
	// A credential's lookup (any caller's, with any token) is an
	// operator's read too.
	lookup, cancelLookup := context.WithTimeout(intake.OperatorRead(ctx), 100*time.Millisecond)
	defer cancelLookup()
	if _, _, err := s.OrgByKeyHash(lookup, []byte("key-"+o.org.ID)); err == nil {
		t.Fatal("a key's lookup ran while the operators' pool was all held: it took a pipeline connection")
	}
	if _, _, err := s.OrgByKeyHash(pipeline, []byte("key-"+o.org.ID)); err != nil {
		t.Fatalf("a key's lookup on the pipeline's pool: %v", err)
	}
	// So is a console cookie's.
	cookie, cancelCookie := context.WithTimeout(intake.OperatorRead(ctx), 100*time.Millisecond)
	defer cancelCookie()
	if _, err := s.SessionByHash(cookie, []byte("no such session"), t0); intake.ErrorCode(err) == intake.ENOTFOUND {
		t.Fatal("a console session's lookup ran while the operators' pool was all held: it took a pipeline connection")
	}
	if _, err := s.SessionByHash(pipeline, []byte("no such session"), t0); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("a console session's lookup on the pipeline's pool: %v, want ENOTFOUND", err)
	}
}

// TestOpenReturnsOnceTheListenerListens: the store hears other processes'
// changes from when Open returns, and its change counter has moved once
// for what went unheard before, so no later move stands for nothing (the
// conformance suite reads the counter right after Open).
func TestOpenReturnsOnceTheListenerListens(t *testing.T) {
	s := open(t)
	select {
	case <-s.listening:
	default:
		t.Fatal("Open returned before the notification listener listened")
	}
	if s.Changes().Version() == 0 {
		t.Fatal("the change counter has not moved for what went unheard before the listener listened")
	}
}

// TestOperatorReadsReachTheWritableServerOfAMultiHostURL: the URL an
// operator gives to follow a failover names every server (the first one
// here down) and target_session_attrs=read-write. The operators' pool
// connects to the writable one like the main pool does, and its sessions
// are read only all the same.
func TestOperatorReadsReachTheWritableServerOfAMultiHostURL(t *testing.T) {
	ctx := context.Background()
	db, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close() // nothing listens there: a server that is down
	db.Host = down + "," + db.Host
	q := db.Query()
	q.Set("target_session_attrs", "read-write")
	db.RawQuery = q.Encode()
	s := openWith(t, Options{URL: db.String()})

	o := newOrg(t, s, "acme")
	m := &intake.Message{ID: intake.NewID(), OrgID: o.org.ID, ConnectionID: o.conn.ID, EndpointID: o.ep.ID, Method: "POST",
		ReceivedAt: t0, State: intake.MessageQueued, MaxAttempts: 3, NextAttemptAt: t0, Body: []byte(`{}`)}
	if err := s.Ingest(ctx, m); err != nil {
		t.Fatal(err)
	}
	read, cancel := context.WithTimeout(intake.OperatorRead(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.Message(read, intake.Scope{}, m.ID); err != nil {
		t.Fatalf("an operator's read through %s: %v", db.Redacted(), err)
	}
	if err := s.read(read, intake.Scope{}, func(b *pgx.Batch) { b.Queue(`CREATE TABLE t_reads (x int)`) }); err == nil {
		t.Fatal("the operators' pool wrote")
	}
}
