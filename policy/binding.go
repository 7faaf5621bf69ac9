package policy

import (
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/envsieve/envsieve/profiles"
)

// BrokerSettings are the policy's top-level broker: settings.
type BrokerSettings struct {
	// BoundOnly refuses connections to hosts no binding names (egress:
	// bound-only); false tunnels them untouched (egress: open, the
	// default).
	BoundOnly bool
	// UpstreamCA are PEM files of extra roots the broker trusts upstream
	// (a corporate proxy, a test server), besides the system's.
	UpstreamCA []string
}

type rawBinding struct {
	Pos                       Pos
	Hosts, In, Methods, Paths []str
	BaseURL, Upstream         *str
}

type rawBroker struct {
	Pos        Pos
	Egress     *str
	UpstreamCA []str
}

// binding decodes a binding's mapping.
func (d *decoder) binding(what string, n ast.Node) *rawBinding {
	rb := &rawBinding{Pos: d.nodePos(n)}
	d.fields(n, what, map[string]func(str, ast.Node){
		"hosts": func(_ str, v ast.Node) { rb.Hosts = d.strList(what+": hosts", v) },
		"in": func(_ str, v ast.Node) {
			d.sequence(what+": in", v, func(n ast.Node) {
				if s, ok := d.colonScalar(n, "header", "query", "form", "json"); ok {
					rb.In = append(rb.In, s)
				} else if s, ok := d.str(what+": in entry", n); ok {
					rb.In = append(rb.In, s)
				}
			})
		},
		"methods":  func(_ str, v ast.Node) { rb.Methods = d.strList(what+": methods", v) },
		"paths":    func(_ str, v ast.Node) { rb.Paths = d.strList(what+": paths", v) },
		"base_url": d.optStr(what+": base_url", &rb.BaseURL),
		"upstream": d.optStr(what+": upstream", &rb.Upstream),
	})
	return rb
}

// checkBinding validates a decoded binding and returns it compiled.
func (d *decoder) checkBinding(what, name string, rb *rawBinding) *Binding {
	bd := &Binding{Name: name, Pos: rb.Pos}
	for _, h := range rb.Hosts {
		if !validHostPattern(h.V) {
			d.errorAt(h.Pos, "%s: hosts: %q is not a host, host:port or *.suffix", what, h.V)
			continue
		}
		bd.Hosts = append(bd.Hosts, h.V)
	}
	var body *str
	for _, in := range rb.In {
		kind, field, ok := strings.Cut(in.V, ":")
		if !ok || (kind != "header" && kind != "query" && kind != "form" && kind != "json") || field == "" || strings.ContainsAny(field, " \t:\r\n") {
			d.errorAt(in.Pos, "%s: in: want header:NAME, query:NAME, or a token endpoint's body field form:NAME or json:NAME, got %q", what, in.V)
			continue
		}
		if kind == "form" || kind == "json" {
			body = &in
		}
		bd.In = append(bd.In, in.V)
	}
	if body != nil && len(rb.Paths) == 0 {
		// A body field is swapped on one endpoint only (docs/broker.md).
		d.errorAt(body.Pos, "%s: in: %s is a body field: the binding needs paths (its token endpoint's path)", what, body.V)
	}
	for _, m := range rb.Methods {
		if m.V == "" || strings.ToUpper(m.V) != m.V || strings.ContainsAny(m.V, " \t/") {
			d.errorAt(m.Pos, "%s: methods: want an HTTP method such as GET, got %q", what, m.V)
			continue
		}
		bd.Methods = append(bd.Methods, m.V)
	}
	for _, p := range rb.Paths {
		if !strings.HasPrefix(p.V, "/") {
			d.errorAt(p.Pos, "%s: paths: want a path prefix starting with /, got %q", what, p.V)
			continue
		}
		bd.Paths = append(bd.Paths, p.V)
	}
	if rb.BaseURL != nil {
		if !ValidName(rb.BaseURL.V) {
			d.errorAt(rb.BaseURL.Pos, "%s: base_url: want the name of the endpoint variable, such as ANTHROPIC_BASE_URL, got %q", what, rb.BaseURL.V)
		}
		bd.BaseURL = rb.BaseURL.V
	}
	if rb.Upstream != nil {
		if err := checkUpstream(rb.Upstream.V); err != "" {
			d.errorAt(rb.Upstream.Pos, "%s: upstream: %s", what, err)
		}
		if rb.BaseURL == nil {
			d.errorAt(rb.Upstream.Pos, "%s: upstream is used only with base_url", what)
		}
		bd.Upstream = rb.Upstream.V
	}
	if len(rb.Hosts) == 0 && rb.BaseURL == nil {
		d.errorAt(rb.Pos, "%s: a binding needs hosts, base_url or both", what)
	}
	return bd
}

// checkUpstream returns why s cannot be a base-URL upstream, or "": https,
// or http to loopback only.
func checkUpstream(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "want an absolute URL such as https://api.anthropic.com"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		h := u.Hostname()
		if ip, err := netip.ParseAddr(h); h == "localhost" || err == nil && ip.IsLoopback() {
			return ""
		}
		return "plain http only to loopback: the real value would cross the network in the clear"
	}
	return "want https (or http on loopback)"
}

// validHostPattern reports whether h is host, host:port or *.suffix.
func validHostPattern(h string) bool {
	host := h
	if ap, err := netip.ParseAddrPort(h); err == nil {
		return ap.Port() != 0
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[:i], ":") {
		port := h[i+1:]
		if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h[:i]
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return true
	}
	host = strings.TrimPrefix(host, "*.")
	if host == "" || len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || strings.Trim(strings.ToLower(label), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return false
		}
	}
	return true
}

// brokerCatalog is the parsed profiles/brokers.yaml, parsed on first use.
var brokerCatalog = sync.OnceValues(func() (map[string]*Binding, error) {
	return parseBrokerCatalog("embedded:brokers.yaml", profiles.Brokers)
})

func parseBrokerCatalog(file string, src []byte) (map[string]*Binding, error) {
	d := &decoder{file: file, src: src}
	root := d.parseYAML()
	if root == nil {
		return nil, d.errs
	}
	out := map[string]*Binding{}
	d.eachPair(root, "brokers", func(name str, v ast.Node) {
		what := "broker catalog " + name.V
		if !ValidName(name.V) {
			d.errorAt(name.Pos, "%s: not a variable name", what)
			return
		}
		bd := d.checkBinding(what, name.V, d.binding(what, v))
		bd.Builtin = true
		out[name.V] = bd
	})
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return out, nil
}

// CatalogBindings returns the built-in catalog's bindings, by name order.
func CatalogBindings() ([]*Binding, error) {
	c, err := brokerCatalog()
	if err != nil {
		return nil, err
	}
	out := make([]*Binding, 0, len(c))
	for _, b := range c {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Binding returns the binding of the secret name: the policy's own
// (secrets.NAME.broker), else the catalog's; nil when neither has one.
func (p *Policy) Binding(name string) *Binding {
	if s, ok := p.Secrets[name]; ok && s.Broker != nil {
		return s.Broker
	}
	c, err := brokerCatalog()
	if err != nil {
		return nil // the catalog is tested; a broken one binds nothing
	}
	return c[name]
}
