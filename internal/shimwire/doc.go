// Package shimwire is the private protocol between the shim
// (shim/libenvsieve, envsieve-start) and its launcher: the variables the
// launcher sets for the shim ([EnvSock], [EnvHide], ...), the wire messages
// and their parser, the launcher's answers, and the launcher's end of the
// socket ([Listen], [Server]), which hands what the tree sends to a
// [Handler] (package launch's shimRun). Both ends ship together, so the
// protocol is no promise to anyone else and lives under internal/; package
// shim keeps what finds and configures the library (docs/shim.md).
//
// # Guarantees
//
// The parser takes nothing on trust: any process of the launched tree can
// write to the socket, so [Parse] and [ParseStart] bound every size, accept
// only valid variable names and no empty argv, and wrap every refusal in
// [ErrMessage]. The fuzz targets check that what they accept re-encodes to
// what was sent. The server serves only peers of the launcher's own uid,
// bounds the connections and start requests it serves at once, and sends a
// start request's caller its descriptors' request ([Granted]) only once its
// [Handler] has decided to start the program.
package shimwire
