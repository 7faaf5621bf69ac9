//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
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
	m.URL = serveHTTP(t, http.HandlerFunc(m.anthropic))
	return m
}

// serveHTTP serves h over plain HTTP on loopback until the test ends.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
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
	body := m.record(r)
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
		m.recordResult(result)
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

// record reads a request's body (up to 16 MiB) and records it.
func (m *modelStandIn) record(r *http.Request) []byte {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	m.mu.Unlock()
	return body
}

// recordResult records a tool result the agent sent back.
func (m *modelStandIn) recordResult(result string) {
	m.mu.Lock()
	m.results = append(m.results, result)
	m.mu.Unlock()
}

// seen returns copies of what the stand-in recorded.
func (m *modelStandIn) seen() (keys, bodies, results []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.keys...), append([]string(nil), m.bodies...), append([]string(nil), m.results...)
}

// geminiModel starts a stand-in for the Gemini API
// (models/MODEL:generateContent and :streamGenerateContent?alt=sse)
// whose function call runs canary in Gemini CLI's run_shell_command.
func geminiModel(t *testing.T, canary string) *modelStandIn {
	t.Helper()
	m := &modelStandIn{canary: canary}
	m.URL = serveHTTP(t, http.HandlerFunc(m.gemini))
	return m
}

// geminiRequest is the part of a generateContent request the stand-in reads.
type geminiRequest struct {
	Contents []struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (m *modelStandIn) gemini(w http.ResponseWriter, r *http.Request) {
	body := m.record(r)
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, ":countTokens"):
		fmt.Fprint(w, `{"totalTokens": 12}`)
		return
	case !strings.HasSuffix(path, ":generateContent") && !strings.HasSuffix(path, ":streamGenerateContent"):
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	m.keys = append(m.keys, r.Header.Get("X-Goog-Api-Key")+r.URL.Query().Get("key"))
	m.mu.Unlock()
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
		return
	}
	hasShell := false
	for _, tool := range req.Tools {
		for _, f := range tool.FunctionDeclarations {
			hasShell = hasShell || f.Name == "run_shell_command"
		}
	}
	var result string
	answered := false
	if n := len(req.Contents); n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			var part struct {
				FunctionResponse json.RawMessage `json:"functionResponse"`
			}
			if json.Unmarshal(p, &part) == nil && part.FunctionResponse != nil {
				answered = true
				result += string(part.FunctionResponse)
			}
		}
	}
	if answered {
		m.recordResult(result)
	}
	var part map[string]any
	switch {
	case hasShell && !answered:
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
			"args": map[string]any{"command": m.canary, "description": "canary"}}}
	case answered:
		part = map[string]any{"text": "canary done"}
	default:
		part = map[string]any{"text": `{"reasoning": "stand-in", "next_speaker": "user", "model_choice": "flash"}`}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15},
		"modelVersion":  "gemini-standin",
	}
	b, _ := json.Marshal(resp)
	if strings.HasSuffix(path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// openaiModel starts a stand-in for the OpenAI Responses API
// (POST /v1/responses, streamed) whose tool call has Codex run canary.
// Codex 0.169 offers its tools in code mode: one custom tool, exec, takes
// JavaScript that calls the nested tools, so the call is a script that
// runs exec_command. With tlsServer the stand-in speaks HTTPS only (its
// certificate, for 127.0.0.1, in caPEM), as a provider does.
func openaiModel(t *testing.T, canary string, tlsServer bool) (m *modelStandIn, caPEM []byte) {
	t.Helper()
	m = &modelStandIn{canary: canary}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(m.openai))
	if tlsServer {
		// A CA and a leaf it signed: rustls (Codex) refuses a self-signed
		// CA certificate as a server's own, which httptest's is.
		var leaf tls.Certificate
		caPEM, leaf = standInCA(t)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m, caPEM
}

func (m *modelStandIn) openai(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		// Codex tries a websocket first, then falls back to HTTP.
		http.NotFound(w, r)
		return
	}
	body := m.record(r)
	m.mu.Lock()
	m.keys = append(m.keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	m.mu.Unlock()
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var result string
	answered := false
	for _, it := range req.Input {
		if strings.HasSuffix(it.Type, "call_output") && it.CallID == "call_canary" {
			answered = true
			result += string(it.Output)
		}
	}
	if answered {
		m.recordResult(result)
	}
	var item map[string]any
	if answered {
		item = map[string]any{"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "canary done", "annotations": []any{}}}}
	} else {
		script, _ := json.Marshal(m.canary)
		item = map[string]any{"type": "custom_tool_call", "id": "ctc_standin", "call_id": "call_canary",
			"namespace": "functions", "name": "exec", "status": "completed",
			"input": "const r = await tools.exec_command({cmd: " + string(script) + "});\ntext(r);\n"}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
	}
	resp := map[string]any{"id": "resp_standin", "object": "response", "status": "in_progress", "output": []any{}}
	event(map[string]any{"type": "response.created", "response": resp})
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	done := map[string]any{"id": "resp_standin", "object": "response", "status": "completed", "output": []any{item},
		"usage": map[string]any{"input_tokens": 12, "output_tokens": 3, "total_tokens": 15,
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}}
	event(map[string]any{"type": "response.completed", "response": done})
}

// standInCA makes a CA and a leaf certificate for 127.0.0.1 signed by it,
// for a stand-in HTTPS server.
func standInCA(t *testing.T) (caPEM []byte, leaf tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stand-in CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
