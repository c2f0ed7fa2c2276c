package adapters

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// modelAPI is a fake model provider on loopback: it answers the Anthropic messages API, the
// OpenAI responses and chat completions APIs and the Gemini API with a one-word reply, streamed
// the way each client asks, and records every request it was sent.
type modelAPI struct {
	URL string
	mu  sync.Mutex
	got []apiRequest
}

type apiRequest struct {
	Method, Path string
	Body         []byte
}

func startModelAPI(t *testing.T) *modelAPI {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &modelAPI{URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

// reset forgets the requests recorded so far.
func (m *modelAPI) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = nil
}

func (m *modelAPI) requests() []apiRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]apiRequest(nil), m.got...)
}

func (m *modelAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.got = append(m.got, apiRequest{r.Method, r.URL.Path, body})
	m.mu.Unlock()
	var req struct {
		Stream bool `json:"stream"`
		Config struct {
			MimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(body, &req)
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 10})
	case strings.HasSuffix(p, "/messages"):
		anthropic(w, req.Stream)
	case strings.HasSuffix(p, "/responses"):
		responses(w)
	case strings.HasSuffix(p, "/chat/completions"):
		chat(w, req.Stream)
	case strings.HasSuffix(p, "/models") || strings.Contains(p, "/models?"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	case strings.Contains(p, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 10})
	case strings.Contains(p, ":streamGenerateContent"):
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(geminiReply(reply))
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	case strings.Contains(p, ":generateContent"):
		text := reply
		if req.Config.MimeType == "application/json" { // gemini-cli's routing and next-speaker checks
			text = `{"complexity_reasoning":"simple","complexity_score":10,"reasoning":"done","next_speaker":"user"}`
		}
		writeJSON(w, geminiReply(text))
	default:
		writeJSON(w, map[string]any{})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func sse(w http.ResponseWriter, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		b, _ := json.Marshal(e)
		var typ struct{ Type string }
		json.Unmarshal(b, &typ)
		if typ.Type != "" {
			fmt.Fprintf(w, "event: %s\n", typ.Type)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
}

const reply = "ok"

func anthropic(w http.ResponseWriter, stream bool) {
	usage := map[string]any{"input_tokens": 10, "output_tokens": 1}
	if !stream {
		writeJSON(w, map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "text", "text": reply}}, "stop_reason": "end_turn", "stop_sequence": nil, "usage": usage})
		return
	}
	sse(w,
		map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
			"model": "claude-sonnet-4-5", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}},
		map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}},
		map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": reply}},
		map[string]any{"type": "content_block_stop", "index": 0},
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}},
		map[string]any{"type": "message_stop"})
}

func responses(w http.ResponseWriter) {
	sse(w,
		map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_1"}},
		map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "message", "role": "assistant", "id": "msg_1",
			"content": []any{map[string]any{"type": "output_text", "text": reply}}}},
		map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_1", "usage": map[string]any{
			"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 1, "output_tokens_details": nil, "total_tokens": 11}}})
}

func chat(w http.ResponseWriter, stream bool) {
	if !stream {
		writeJSON(w, map[string]any{"id": "c1", "object": "chat.completion", "choices": []any{map[string]any{"index": 0,
			"message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0,
		"delta": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

func geminiReply(text string) any {
	return map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
		"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}}
}
