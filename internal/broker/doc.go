// Package broker keeps the real values of HTTP credentials out of an
// agent's process tree. The tree gets a fake of each brokered secret (the
// same known prefix, length and alphabet; see [Fake]); a broker on a
// loopback port, run by the launcher outside the tree, swaps the fake for
// the real value only on requests to the hosts the secret is bound to,
// and only in the places its binding names (the authorization headers by
// default), never in a body. So a value the agent reads, transforms or
// sends anywhere is a fake; the real one reaches only its own host.
//
// Two ways in, served by one listener ([Start]):
//
//   - base-URL mode, for clients with an endpoint variable
//     (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, ...): [Broker.ChildEnv] points
//     the variable at the broker under a random path prefix, and the broker
//     forwards to the user's original endpoint or the binding's upstream;
//   - proxy mode, for everything else (gh, git, npm, curl, python): the
//     proxy variables point at the broker with a per-launch credential; a
//     CONNECT to a bound host is terminated with a certificate of a
//     per-launch CA (key in memory only, name constraints limited to the
//     bound hosts) that the child trusts through a bundle of the system
//     roots plus that CA; any other CONNECT is tunnelled untouched, or
//     refused when [Config.BoundOnly].
//
// # Security
//
//   - A fake in a request to a host its secret is not bound to (headers,
//     query or path, where the broker sees them: plain HTTP, or an
//     intercepted host) is refused with 403 and an [Event]; a fake in an
//     unswapped place of its own host (another header, the body) goes
//     through as the fake, with an event. A fake in a body to another host
//     is reported, not refused (the broker does not buffer bodies).
//   - The real value goes only inside TLS, or in the clear to loopback (a
//     local model server); a base-URL upstream is https or loopback http.
//   - Responses are scrubbed: the real value in a header or a streamed body,
//     however it is split, reaches the child as the fake. Hosts are asked
//     for identity encoding; a body that comes compressed all the same is
//     decoded (capped: [Config.MaxDecoded]) and scrubbed, and sent on
//     decoded; one the broker cannot decode is refused or cut, never
//     passed on as it came.
//   - Only the launch's user is served (the loopback peer's uid: on Linux
//     one exact sock_diag lookup of the peer's established socket, on macOS
//     the kernel's socket table; elsewhere no connection is), and only with
//     the launch's credential (Proxy-Authorization, or the base-URL path
//     prefix). A peer that cannot be told is refused.
//   - The tree cannot hold the broker up: a child connection's request
//     headers and an intercepted CONNECT's TLS handshake have deadlines, a
//     kept-alive connection an idle timeout, and the connections open at
//     once a cap past which one is answered 503 (Config's HeaderTimeout,
//     HandshakeTimeout, IdleTimeout, MaxConns), each refusal audited.
//   - AWS keys are re-signed, not swapped ([AWSCred]): a request to an
//     AWS endpoint signed with the tree's fake keys is verified with the
//     fake secret and signed again with the real keys (package sigv4);
//     what cannot be re-signed soundly (presigned URLs, signed aws-chunked
//     streams, SigV4A) or does not verify is refused with a named reason.
//     An answer from an AWS host never carries real AWS keys to the tree:
//     keys AWS minted (STS, IAM CreateAccessKey, the SSO portal, Cognito)
//     are replaced by fresh fakes the broker then re-signs for, every real
//     key a source gave the broker is scrubbed, and an answer with a secret
//     key field it cannot rewrite is refused (502) or cut (awsmint.go).
//   - What it cannot do: a brokered capability can still be used against
//     its own host within its binding (the agent can call the API the key
//     is for); credentials that are not HTTP headers (database URLs, SSH)
//     are not brokered.
package broker
