//go:build ignore

// Command smoke drives a real intake server through the Go client that
// scripts/openapi-client.sh generates from api/openapi.json: it creates an
// org, a connection and an endpoint, posts a webhook, follows it to
// processed and reads its raw body back, and reads one error answer. It is
// built in the generated client's module, never in intake's.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/google/uuid"

	"intakeclient"
)

const token = "smoke-staff-token"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: smoke PATH-TO-INTAKE-BINARY")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "smoke:", err)
		os.Exit(1)
	}
}

func run(binary string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	data, err := os.MkdirTemp("", "intake-smoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)
	srv := exec.Command(binary, "serve", "--addr", addr, "--data", data)
	srv.Env = append(os.Environ(), "INTAKE_ADMIN_TOKEN="+token)
	var logs bytes.Buffer
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	err = drive("http://" + addr)
	_ = srv.Process.Signal(syscall.SIGTERM)
	if werr := <-exited; werr != nil && err == nil {
		err = fmt.Errorf("intake serve did not exit cleanly: %v", werr)
	}
	if err != nil {
		return fmt.Errorf("%w\nserver log:\n%s", err, logs.String())
	}
	return nil
}

func drive(base string) error {
	ctx := context.Background()
	if err := waitReady(ctx, base); err != nil {
		return err
	}
	staff, err := client(base, token)
	if err != nil {
		return err
	}
	org, err := staff.CreateOrgWithResponse(ctx, intakeclient.CreateOrgJSONRequestBody{Name: "smoke"})
	if err != nil || org.JSON201 == nil || org.JSON201.ApiKey == nil {
		return unexpected("create org", org, err)
	}
	key, err := client(base, *org.JSON201.ApiKey)
	if err != nil {
		return err
	}
	conn, err := key.CreateConnectionWithResponse(ctx, intakeclient.CreateConnectionJSONRequestBody{Provider: "none", Name: "smoke"})
	if err != nil || conn.JSON201 == nil {
		return unexpected("create connection", conn, err)
	}
	ep, err := key.CreateEndpointWithResponse(ctx, intakeclient.CreateEndpointJSONRequestBody{ConnectionId: conn.JSON201.Id})
	if err != nil || ep.JSON201 == nil || ep.JSON201.Url == nil {
		return unexpected("create endpoint", ep, err)
	}
	body := `{"type":"smoke.test","id":"evt_1"}`
	resp, err := http.Post(*ep.JSON201.Url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("posting a webhook: status %d", resp.StatusCode)
	}

	var msg intakeclient.Message
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := key.ListMessagesWithResponse(ctx, &intakeclient.ListMessagesParams{})
		if err != nil || list.JSON200 == nil {
			return unexpected("list messages", list, err)
		}
		if len(list.JSON200.Items) == 1 && list.JSON200.Items[0].State == "processed" {
			msg = list.JSON200.Items[0]
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook was not processed within 20s: %s", list.Body)
		}
		time.Sleep(100 * time.Millisecond) // a client polling a server
	}
	id, err := uuid.Parse(msg.Id)
	if err != nil {
		return err
	}
	detail, err := key.GetMessageWithResponse(ctx, id)
	if err != nil || detail.JSON200 == nil || detail.JSON200.Outcome != msg.Outcome {
		return unexpected("get message", detail, err)
	}
	raw, err := key.GetMessageBodyWithResponse(ctx, id)
	if err != nil || raw.StatusCode() != 200 || string(raw.Body) != body {
		return unexpected("get message body", raw, err)
	}
	missing, err := key.GetConnectionWithResponse(ctx, uuid.New())
	if err != nil || missing.JSON404 == nil || string(missing.JSON404.Error.Code) != "not_found" {
		return unexpected("get a connection that does not exist", missing, err)
	}
	fmt.Printf("openapi: the generated client created an org, a connection and an endpoint, "+
		"followed a webhook to %s (outcome %s), read its body back and a 404 error body\n", msg.State, msg.Outcome)
	return nil
}

func client(base, tok string) (*intakeclient.ClientWithResponses, error) {
	return intakeclient.NewClientWithResponses(base, intakeclient.WithRequestEditorFn(
		func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+tok)
			return nil
		}))
}

// answer is what every generated response type offers.
type answer interface {
	StatusCode() int
}

func unexpected(what string, a answer, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: unexpected answer, status %d", what, a.StatusCode())
}

func waitReady(ctx context.Context, base string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("intake serve was not ready within 30s")
		}
		time.Sleep(100 * time.Millisecond) // a client waiting for a server to start
	}
}

// freeAddr finds a loopback port nobody listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
