package s3test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A port another program answers on is not versitygw ready: Restart fails there (versitygw
// cannot bind it and exits) instead of taking the other program's answer for its own.
func TestRestartRefusesAnotherServer(t *testing.T) {
	Binary(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer other.Close()
	s := &Server{Dir: t.TempDir(), Bucket: "attachctl"}
	s.addr = strings.TrimPrefix(other.URL, "http://")
	s.Endpoint = other.URL
	if err := s.Restart(); err == nil {
		s.Stop()
		t.Fatal("Restart took another server's answer for versitygw's")
	}
}

// Start still finds a port and a server that answers as versitygw.
func TestStartAnswers(t *testing.T) {
	s := Start(t)
	resp, err := http.Get(s.Endpoint + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Server"); got != "VERSITYGW" {
		t.Fatalf("Server header %q", got)
	}
}
