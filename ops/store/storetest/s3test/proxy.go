package s3test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Proxy is a loopback HTTP proxy in front of the server, for faults a real server does not make
// on demand: it passes each request on, signed again for the server (the client signed it for
// the proxy's address), unless Fault answers it first, and it can strip the conditional headers
// as a server that ignores them would.
type Proxy struct {
	Endpoint string // http://127.0.0.1:PORT
	// StripConditions drops If-None-Match and If-Match from every request.
	StripConditions bool

	mu    sync.Mutex
	fault func(w http.ResponseWriter, r *http.Request) bool
	lose  func(r *http.Request) bool
}

// SetLoseAnswer makes f see each request first: when it returns true the request goes on to the
// server, and once the server has answered, the client's connection is broken without the
// answer: a request the server took whose answer was lost, which the client tries again. nil:
// every answer is passed on.
func (p *Proxy) SetLoseAnswer(f func(r *http.Request) bool) {
	p.mu.Lock()
	p.lose = f
	p.mu.Unlock()
}

// SetFault makes f see each request first: when it returns true it has answered (or broken the
// connection) and the request goes no further. nil: no fault.
func (p *Proxy) SetFault(f func(w http.ResponseWriter, r *http.Request) bool) {
	p.mu.Lock()
	p.fault = f
	p.mu.Unlock()
}

// Proxy starts a proxy in front of s; it stops with the test.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Endpoint: "http://" + l.Addr().String()}
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	signer := v4.NewSigner()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		fault, lose := p.fault, p.lose
		p.mu.Unlock()
		if fault != nil && fault(w, r) {
			return
		}
		lost := lose != nil && lose(r)
		// What the server received it finishes, as a server does when its client goes.
		out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, s.Endpoint+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out.ContentLength = r.ContentLength
		for k, vs := range r.Header {
			switch strings.ToLower(k) {
			case "authorization", "x-amz-date", "host":
				continue
			case "if-none-match", "if-match":
				if p.StripConditions {
					continue
				}
			}
			out.Header[k] = vs
		}
		payload := r.Header.Get("X-Amz-Content-Sha256")
		if payload == "" {
			payload = "UNSIGNED-PAYLOAD"
		}
		if err := signer.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: Access, SecretAccessKey: Secret}, out, payload, "s3", Region, time.Now()); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		resp, err := transport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		if lost {
			io.Copy(io.Discard, resp.Body)
			Hang(w)
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); transport.CloseIdleConnections() })
	return p
}

// Env is the server's environment with the proxy as the endpoint.
func (p *Proxy) Env(s *Server) []string {
	env := s.Env()
	for i, kv := range env {
		if strings.HasPrefix(kv, "AWS_ENDPOINT_URL_S3=") {
			env[i] = "AWS_ENDPOINT_URL_S3=" + p.Endpoint
		}
	}
	return env
}

// Setenv points the AWS variables of the test at the proxy.
func (p *Proxy) Setenv(t testing.TB, s *Server) {
	for _, kv := range p.Env(s) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Hang breaks the connection of a request without an answer: what a server that dies does.
func Hang(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
		}
	}
}

// Silent starts a loopback listener that accepts connections and never answers (nor closes
// them): a server that has hung. It returns its endpoint; it stops with the test.
func Silent(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + l.Addr().String()
}
