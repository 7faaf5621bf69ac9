package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// A response the broker scrubs must be scrubbed as the child will read it:
// a real value inside a gzip stream is not in the bytes the scrubber sees.
// So the broker asks every host for identity encoding, and a response that
// still comes compressed (a host that ignores Accept-Encoding) is decoded
// here, with a cap on what it may expand to, before the scrubber; the child
// gets it decoded, without Content-Encoding and Content-Length. An encoding
// the broker cannot decode is refused, never passed on as it came.

// defaultMaxDecoded is the cap on the bytes one compressed response (each
// layer of a stacked encoding) may decode to when Config.MaxDecoded is 0.
const defaultMaxDecoded = 256 << 20

// maxCodings is how many content codings one response may stack.
const maxCodings = 4

// zstdMaxWindow is the largest zstd window the broker decodes: 8 MiB, the
// limit RFC 9659 sets for zstd as an HTTP content coding.
const zstdMaxWindow = 8 << 20

var (
	// errCoding is a Content-Encoding the broker cannot decode.
	errCoding = errors.New("the response's Content-Encoding is not one the broker decodes (gzip, deflate, br, zstd)")
	// errTooLarge is a compressed response past the cap.
	errTooLarge = errors.New("the compressed response decodes to more than the broker's cap")
)

// contentCodings returns the codings of a response's Content-Encoding in
// the order they were applied ("identity" dropped), or errCoding for one
// the broker does not decode, or for more than maxCodings of them.
func contentCodings(h http.Header) ([]string, error) {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			switch c = strings.ToLower(strings.TrimSpace(c)); c {
			case "", "identity":
			case "gzip", "x-gzip", "deflate", "br", "zstd":
				out = append(out, c)
			default:
				return nil, errCoding
			}
		}
	}
	if len(out) > maxCodings {
		return nil, errCoding
	}
	return out, nil
}

// bodiless reports whether a response has no body to decode (its headers
// describe what a GET would carry).
func bodiless(resp *http.Response) bool {
	return resp.Request != nil && resp.Request.Method == http.MethodHead ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified ||
		resp.StatusCode < 200
}

// decoded reads a compressed body decoded: codings (in the order they were
// applied) are undone last to first, each layer's output capped at max
// bytes. The decoders are made at the first read, so that a stream's
// headers reach the child before its first compressed byte arrives. An
// empty body is empty, whatever its codings. Any error of a decoder, and
// the cap, end the body with an error (the response is cut, never passed
// on undecoded), reported once to fail.
type decoded struct {
	body    io.ReadCloser
	codings []string
	max     int64
	fail    func(error)

	r       io.Reader
	closers []func()
	err     error
}

func newDecoded(body io.ReadCloser, codings []string, max int64, fail func(error)) *decoded {
	return &decoded{body: body, codings: codings, max: max, fail: fail}
}

func (d *decoded) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.r == nil {
		if err := d.start(); err != nil {
			return 0, d.failed(err)
		}
	}
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = d.failed(err)
	}
	return n, err
}

func (d *decoded) failed(err error) error {
	if !errors.Is(err, errTooLarge) && !errors.Is(err, errCoding) {
		err = fmt.Errorf("%w: %w", errCoding, err)
	}
	d.err = err
	if d.fail != nil {
		d.fail(err)
	}
	return err
}

// start makes the chain of decoders, innermost (the host's bytes) first.
func (d *decoded) start() error {
	src := bufio.NewReader(d.body)
	if _, err := src.Peek(1); err == io.EOF {
		d.r = eofReader{}
		return nil
	} else if err != nil {
		return err
	}
	var r io.Reader = src
	for i := len(d.codings) - 1; i >= 0; i-- {
		dec, closer, err := decoder(d.codings[i], r)
		if err != nil {
			return err
		}
		if closer != nil {
			d.closers = append(d.closers, closer)
		}
		r = &capped{r: dec, left: d.max}
	}
	d.r = r
	return nil
}

// Close ends the decoders and closes the host's body.
func (d *decoded) Close() error {
	for _, c := range d.closers {
		c()
	}
	d.closers = nil
	if d.err == nil {
		d.err = errAheadClosed
	}
	return d.body.Close()
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// decoder returns a reader of r decoded from coding, and what ends it.
func decoder(coding string, r io.Reader) (io.Reader, func(), error) {
	switch coding {
	case "gzip", "x-gzip":
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return z, func() { z.Close() }, nil
	case "deflate":
		// "deflate" is zlib (RFC 9110); some servers send raw deflate, as
		// browsers accept: a zlib header decides. Either way a stream that
		// does not decode cuts the response.
		br := bufio.NewReader(r)
		h, err := br.Peek(2)
		if err != nil {
			return nil, nil, fmt.Errorf("deflate: %w", err)
		}
		if h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
			z, err := zlib.NewReader(br)
			if err != nil {
				return nil, nil, fmt.Errorf("deflate: %w", err)
			}
			return z, func() { z.Close() }, nil
		}
		f := flate.NewReader(br)
		return f, func() { f.Close() }, nil
	case "br":
		return brotli.NewReader(r), nil, nil
	case "zstd":
		z, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow),
			zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return z, z.Close, nil
	}
	return nil, nil, errCoding
}

// capped reads r until left bytes have come out; a byte past them is
// errTooLarge.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	if int64(n) > c.left {
		n = int(c.left)
		c.left = 0
		return n, errTooLarge
	}
	c.left -= int64(n)
	return n, err
}
