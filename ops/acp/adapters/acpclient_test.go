//go:build unix

package adapters

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// agent is an ACP agent process spoken to over its standard input and output (newline-delimited
// JSON-RPC 2.0), as an editor does.
type agent struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	mu     sync.Mutex
	nextID int
	wait   map[int]chan rpcMsg
	stderr *strings.Builder
	done   chan struct{}
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func startAgent(t *testing.T, ctx context.Context, env []string, dir string, name string, args ...string) *agent {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env, cmd.Dir = env, dir
	a := &agent{t: t, cmd: cmd, wait: map[int]chan rpcMsg{}, stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = lockedWriter{&a.mu, a.stderr}
	var err error
	if a.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children (claude's CLI) go with it
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go a.read(out)
	t.Cleanup(func() {
		a.in.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return a
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (a *agent) logs() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stderr.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

func (a *agent) read(out io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m rpcMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // not a message (an adapter's stray output)
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			a.answer(m)
		case m.Method != "":
			// notifications: session/update and the like
		default:
			var id int
			json.Unmarshal(m.ID, &id)
			a.mu.Lock()
			ch := a.wait[id]
			delete(a.wait, id)
			a.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

// answer replies to the agent's own requests: a permission is refused (the suite needs no tool
// to run), anything else is a method the client does not have.
func (a *agent) answer(m rpcMsg) {
	var reply any
	switch m.Method {
	case "session/request_permission":
		reply = map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}}
	default:
		reply = map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}}
	}
	a.send(reply)
}

func (a *agent) send(v any) {
	b, _ := json.Marshal(v)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.in.Write(append(b, '\n'))
}

// call sends a request and waits for its response, returning the raw result.
func (a *agent) call(method string, params any, timeout time.Duration) (json.RawMessage, error) {
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	ch := make(chan rpcMsg, 1)
	a.wait[id] = ch
	a.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": json.RawMessage(p)})
	select {
	case m := <-ch:
		if len(m.Error) > 0 {
			return nil, fmt.Errorf("%s: error %s", method, m.Error)
		}
		return m.Result, nil
	case <-a.done:
		return nil, fmt.Errorf("%s: the agent exited: %s", method, a.logs())
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: no answer in %v; stderr: %s", method, timeout, a.logs())
	}
}
