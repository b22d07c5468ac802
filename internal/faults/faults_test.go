package faults

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers each line it reads with the same line, and reports
// on sent each answer it wrote.
func echoServer(t *testing.T) (addr string, sent <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan string, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
					out <- line
				}
			}()
		}
	}()
	return ln.Addr().String(), out
}

// TestAPartitionHoldsWhatIsSentAndLetsItThroughWhenItHeals: through a
// partition both ways nothing arrives; once it is cleared, what was sent
// arrives and the connection goes on.
func TestAPartitionHoldsWhatIsSentAndLetsItThroughWhenItHeals(t *testing.T) {
	addr, sent := echoServer(t)
	p, err := NewProxy("echo", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	partition, _ := Find("partition both ways")
	if err := p.Apply(partition); err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "held\n")
	select {
	case line := <-sent:
		t.Fatalf("the server got %q through a partition", line)
	case <-time.After(200 * time.Millisecond):
	}
	p.Clear()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.ReadString('\n'); line != "held\n" {
		t.Fatalf("once the partition healed, read %q (%v), want what was held", line, err)
	}
	io.WriteString(c, "after\n")
	if line, err := r.ReadString('\n'); line != "after\n" {
		t.Fatalf("after the partition, read %q (%v)", line, err)
	}
}

// TestAPartitionHealsAtOnceWhenAConnectionItHeldWentAway: answers held by
// a partition to a client that hung up are dropped with its connection
// when the partition heals; clearing it does not wait on them, and a new
// connection goes through at once.
func TestAPartitionHealsAtOnceWhenAConnectionItHeldWentAway(t *testing.T) {
	addr, sent := echoServer(t)
	p, err := NewProxy("echo", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	answersHeld, _ := Find("partition one way (answers held)")
	if err := p.Apply(answersHeld); err != nil {
		t.Fatal(err)
	}
	// Answers the server wrote one after the other: chunks of their own.
	for _, line := range []string{"a\n", "b\n", "c\n", "d\n"} {
		io.WriteString(c, line)
		if got := <-sent; got != line {
			t.Fatalf("the server answered %q, want %q", got, line)
		}
	}
	c.Close()

	cleared := make(chan struct{})
	go func() { p.Clear(); close(cleared) }()
	select {
	case <-cleared:
	case <-time.After(4 * flushWait):
		t.Fatalf("clearing the partition still waits %v on a connection that went away", 4*flushWait)
	}
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c2, "new\n")
	if line, err := bufio.NewReader(c2).ReadString('\n'); line != "new\n" {
		t.Fatalf("a new connection after the partition read %q (%v)", line, err)
	}
}
