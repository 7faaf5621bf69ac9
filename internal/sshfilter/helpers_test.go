package sshfilter

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"golang.org/x/crypto/ssh"
)

func ed25519Key(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ed25519Signer(t testing.TB) (ed25519.PrivateKey, ssh.Signer, ssh.PublicKey) {
	t.Helper()
	k := ed25519Key(t)
	s, err := ssh.NewSignerFromKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, s, s.PublicKey()
}

func bindMsg(hostKey ssh.PublicKey, sid []byte, sig *ssh.Signature, forwarding bool) []byte {
	b := putString(nil, hostKey.Marshal())
	b = putString(b, sid)
	b = putString(b, ssh.Marshal(sig))
	if forwarding {
		return append(b, 1)
	}
	return append(b, 0)
}

func userauth(sid []byte, key ssh.PublicKey, method string, hostKey []byte) []byte {
	b := putString(nil, sid)
	b = append(b, msgUserauthRequest)
	b = putString(b, []byte("git"))
	b = putString(b, []byte("ssh-connection"))
	b = putString(b, []byte(method))
	b = append(b, 1)
	b = putString(b, []byte(key.Type()))
	b = putString(b, key.Marshal())
	if method == methodHostbound {
		b = putString(b, hostKey)
	}
	return b
}
