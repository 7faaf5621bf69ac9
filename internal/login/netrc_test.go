package login

import "testing"

var netrcCases = []fakerCase{
	{name: "one line", in: "machine api.example.com login alice password s3cretPass1\n",
		creds: []wantCred{{"netrc:api.example.com", "s3cretPass1", []string{"api.example.com"}}}},
	{name: "several hosts, lines, comments, CRLF",
		in: "# my logins\r\nmachine Git.Example.COM\r\n  login bob\r\n  password tok_abc123XYZ\r\n#trailing\r\n\r\nmachine h2.example.org:443 login c password pw-2222zz account acct9988\r\n",
		creds: []wantCred{
			{"netrc:git.example.com", "tok_abc123XYZ", []string{"git.example.com"}},
			{"netrc:h2.example.org", "pw-2222zz", []string{"h2.example.org"}},
			{"netrc:h2.example.org:account", "acct9988", []string{"h2.example.org"}},
		}},
	{name: "quoted password", in: `machine h.example login u password "a b\"c\\d9"` + "\n",
		creds: []wantCred{{"netrc:h.example", `a b"c\d9`, []string{"h.example"}}},
		out:   `machine h.example login u password ` + netrcWord(fakeOf("netrc:h.example", `a b"c\d9`), true) + "\n"},
	{name: "same host twice", in: "machine h.example login a password first111\nmachine h.example login b password second22\n",
		creds: []wantCred{
			{"netrc:h.example", "first111", []string{"h.example"}},
			{"netrc:h.example#2", "second22", []string{"h.example"}},
		}},
	{name: "macdef passes", in: "machine h.example login a password pass1234\nmacdef init\ncd /pub\npassword notakeyword\n\nmachine g.example password pass5678\n",
		creds: []wantCred{
			{"netrc:h.example", "pass1234", []string{"h.example"}},
			{"netrc:g.example", "pass5678", []string{"g.example"}},
		}},
	{name: "default without password passes", in: "machine h.example password pass1234\ndefault login anonymous\n",
		creds: []wantCred{{"netrc:h.example", "pass1234", []string{"h.example"}}}},
	{name: "no secrets", in: "# nothing\n\n"},
	{name: "empty", in: ""},
	{name: "default with password", in: "default login a password pass1234\n", wantErr: true},
	{name: "password before machine", in: "password pass1234\n", wantErr: true},
	{name: "unknown keyword", in: "machine h.example port 21 password pass1234\n", wantErr: true},
	{name: "keyword without value", in: "machine h.example password", wantErr: true},
	{name: "unterminated quote", in: "machine h.example password \"abc\n", wantErr: true},
	{name: "quote inside word", in: "machine h.example password ab\"cd\n", wantErr: true},
	{name: "backslash inside word", in: "machine h.example password ab\\cd\n", wantErr: true},
	{name: "comment mid-line, a password to curl", in: "machine h.example login u # password pass1234\n", wantErr: true},
	{name: "indented comment", in: "machine h.example password pass1234\n  # note\n", wantErr: true},
	{name: "hash password", in: "machine h.example password #abcdef1\n", wantErr: true},
	{name: "bad host", in: "machine h/x password pass1234\n", wantErr: true},
	{name: "login equals password", in: "machine h.example login pass1234 password pass1234\n", wantErr: true},
	{name: "short password found elsewhere", in: "machine h.example login a password a\n", wantErr: true},
	{name: "macdef ends at the earliest blank line", in: "machine h.example password pass1234\nmacdef m\nls\n \npassword xyzw1234\n",
		creds: []wantCred{
			{"netrc:h.example", "pass1234", []string{"h.example"}},
			{"netrc:h.example#1", "xyzw1234", []string{"h.example"}},
		}},
	{name: "macdef body after a line of blanks", in: "machine h.example password pass1234\nmacdef m\nls\n \nget x\n", wantErr: true},
}

func init() { fuzzSeeds["netrc"] = seedsOf(netrcCases) }

func TestNetrc(t *testing.T) { runFakerCases(t, "netrc", netrcCases) }
