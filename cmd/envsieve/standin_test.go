//go:build linux

package main

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

// modelStandIn is a loopback stand-in for a model provider's API, enough
// of it for a real agent CLI to work one turn: the first request that
// offers the agent's shell tool is answered with a call of that tool
// running canary; the request that carries the tool's result is answered
// with a final text. Everything else (titles, quota probes, token counts)
// gets a short text. It records every credential header and every body it
// received, so a test can say what the provider, and so the model, saw.
type modelStandIn struct {
	URL    string
	canary string

	mu      sync.Mutex
	keys    []string // the credential of each model request
	bodies  []string // every request body
	results []string // the tool results the agent sent back
}

// anthropicModel starts a stand-in for the Anthropic Messages API
// (POST /v1/messages, streamed as server-sent events or not) whose tool
// call runs canary in the agent's Bash tool.
func anthropicModel(t *testing.T, canary string) *modelStandIn {
	t.Helper()
	m := &modelStandIn{canary: canary}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(m.anthropic)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	m.URL = "http://" + ln.Addr().String()
	return m
}

// anthropicRequest is the part of a Messages request the stand-in reads.
type anthropicRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (m *modelStandIn) anthropic(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	m.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		fmt.Fprint(w, `{"input_tokens": 12}`)
		return
	case !strings.HasSuffix(r.URL.Path, "/v1/messages"):
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	m.keys = append(m.keys, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
	m.mu.Unlock()
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	hasBash := false
	for _, tool := range req.Tools {
		hasBash = hasBash || tool.Name == "Bash"
	}
	var result string
	answered := false
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(req.Messages[n-1].Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					answered = true
					result += string(b.Content)
				}
			}
		}
	}
	if answered {
		m.mu.Lock()
		m.results = append(m.results, result)
		m.mu.Unlock()
	}
	var block map[string]any
	stop := "end_turn"
	switch {
	case hasBash && !answered:
		block = map[string]any{"type": "tool_use", "id": "toolu_canary", "name": "Bash",
			"input": map[string]any{"command": m.canary, "description": "canary"}}
		stop = "tool_use"
	case answered:
		block = map[string]any{"type": "text", "text": "canary done"}
	default:
		block = map[string]any{"type": "text", "text": "ok"}
	}
	msg := map[string]any{"id": "msg_standin", "type": "message", "role": "assistant",
		"model": "claude-standin", "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 12, "output_tokens": 3}}
	if !req.Stream {
		msg["content"] = []any{block}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	event("message_start", map[string]any{"type": "message_start", "message": start})
	var first, delta map[string]any
	if block["type"] == "tool_use" {
		input, _ := json.Marshal(block["input"])
		first = map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
	} else {
		first = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": block["text"]}
	}
	event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": first})
	event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 3}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// seen returns copies of what the stand-in recorded.
func (m *modelStandIn) seen() (keys, bodies, results []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.keys...), append([]string(nil), m.bodies...), append([]string(nil), m.results...)
}
