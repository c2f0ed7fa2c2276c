// Package s3test starts a real S3-compatible server for tests: versitygw on a free loopback port,
// serving a temporary folder. No fake server: a fake that ignores conditional writes would hide
// exactly the races the S3 store exists to get right.
package s3test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Credentials the test server accepts.
const (
	Access = "attachctl-test"
	Secret = "attachctl-test-secret"
	Region = "us-east-1"
)

// Server is one running versitygw.
type Server struct {
	Dir      string // the posix backend's root: buckets are its folders
	Bucket   string // made by Start
	Endpoint string // http://127.0.0.1:PORT
	addr     string

	mu   sync.Mutex
	proc *os.Process
	done chan struct{}
	log  syncBuffer
}

// Binary finds versitygw, or fails the test under CI=true and skips it otherwise.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		msg := "versitygw not on PATH: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Start runs versitygw on a free loopback port over a fresh temporary folder, makes the bucket
// "attachctl" and stops the server when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	Binary(t)
	s := &Server{Dir: t.TempDir(), Bucket: "attachctl"}
	if err := os.Mkdir(filepath.Join(s.Dir, s.Bucket), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	var err error
	for try := 0; try < 5; try++ { // a free port can be taken between asking and binding
		s.addr, err = freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Endpoint = "http://" + s.addr
		if err = s.Restart(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("versitygw: %v\n%s", err, s.Log())
	}
	return s
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Restart starts the server again (after Stop) on the same port and folder, and waits until it
// answers HTTP as versitygw.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("already running")
	}
	cmd := exec.Command("versitygw", "--access", Access, "--secret", Secret, "--region", Region,
		"--port", s.addr, "--quiet", "--keep-alive", "posix", s.Dir)
	cmd.Stdout = &s.log
	cmd.Stderr = &s.log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		select {
		case <-done:
			return fmt.Errorf("exited before answering: %v", cmd.ProcessState)
		default:
		}
		resp, err := client.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			// Only versitygw's own answer counts: another program that took the port between
			// freePort and versitygw's bind would answer too, while versitygw exits.
			if resp.Header.Get("Server") == "VERSITYGW" {
				s.proc, s.done = cmd.Process, done
				return nil
			}
			err = fmt.Errorf("another server answers there (Server: %q)", resp.Header.Get("Server"))
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("no answer on %s: %v", s.addr, err)
		}
		time.Sleep(wait) // polling until the port answers, not ordering events
	}
}

// Stop kills the server (as a crash would) and waits for it to exit. Stopping a stopped server
// does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.Kill()
	<-s.done
	s.proc, s.done = nil, nil
}

// Log is what the server wrote.
func (s *Server) Log() string { return s.log.String() }

// syncBuffer is a buffer the server's output goroutines and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Env is the environment that points an AWS SDK (and so attachctl) at this server.
func (s *Server) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint,
		"AWS_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=" + Access,
		"AWS_SECRET_ACCESS_KEY=" + Secret,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"ATTACHCTL_S3_PATH_STYLE=1",
	}
}

// Setenv points this process's AWS SDK at the server for the test's length.
func (s *Server) Setenv(t testing.TB) {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// URI is the store URI of prefix in the test bucket.
func (s *Server) URI(prefix string) string { return "s3://" + s.Bucket + "/" + prefix }
