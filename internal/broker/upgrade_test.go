package broker

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestWebSocketUpgrade: a websocket handshake to a bound host gets the
// real value in its Authorization header, the 101 reaches the child, and
// the upgraded connection is tunnelled both ways, the real value in what
// the host sends replaced by the fake. Before, the response scrubber hid
// the upgraded connection from the reverse proxy, which answered 502.
func TestWebSocketUpgrade(t *testing.T) {
	gotAuth := make(chan string, 1)
	host, b := brokerFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth <- r.Header.Get("Authorization")
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "not an upgrade", http.StatusBadRequest)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		line, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		rw.WriteString("echo " + line + "token " + realToken + "\n")
		rw.Flush()
	}))
	fake := b.Fakes()["GITHUB_TOKEN"]

	tr := proxyTransport(t, b)
	req, _ := http.NewRequest("GET", "https://"+host+"/socket", nil)
	req.Header.Set("Authorization", "Bearer "+fake)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if auth := <-gotAuth; auth != "Bearer "+realToken {
		t.Errorf("the handshake reached the host without the real value")
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("the handshake got %s: %s", resp.Status, body)
	}
	conn, ok := resp.Body.(io.ReadWriter)
	if !ok {
		t.Fatal("the upgraded connection is not writable")
	}
	if _, err := io.WriteString(conn, "ping "+fake+"\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	echoed, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	token, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	checkNoReal(t, "what the host sent", []byte(echoed+token))
	if echoed != "echo ping "+fake+"\n" || token != "token "+fake+"\n" {
		t.Errorf("the upgraded stream is not the host's, with the fake for the real value: %q %q",
			strings.ReplaceAll(echoed, fake, "<fake>"), strings.ReplaceAll(token, fake, "<fake>"))
	}
}
