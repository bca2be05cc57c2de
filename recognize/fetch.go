package recognize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/parley-dev/parley"
)

// Fetcher downloads images given by URL: http(s) only, within a size and a time limit,
// and never from loopback, private, link-local or other non-public addresses unless
// their network is allowed. The address is checked when the connection is made, after
// DNS resolution and on every redirect, so a name that resolves to a private address
// (or changes to one) is refused too.
type Fetcher struct {
	MaxBytes int64
	Timeout  time.Duration
	// Allow lists networks that may be fetched from although they are not public.
	Allow []netip.Prefix
	// Logger receives the causes of failed fetches (default slog.Default()).
	Logger *slog.Logger

	client *http.Client
}

var _ parley.ImageFetcher = (*Fetcher)(nil)

// NewFetcher returns a Fetcher.
func NewFetcher(maxBytes int64, timeout time.Duration, allow []netip.Prefix) *Fetcher {
	f := &Fetcher{MaxBytes: maxBytes, Timeout: timeout, Allow: allow}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: f.control}
	f.client = &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would hide the address being reached
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          10,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s URL", req.URL.Scheme)
			}
			return nil
		},
	}
	return f
}

func (f *Fetcher) log() *slog.Logger {
	if f.Logger != nil {
		return f.Logger
	}
	return slog.Default()
}

// errRefusedAddress marks a connection refused by control.
var errRefusedAddress = errors.New("refused address")

// cgnat is the shared address space of carrier-grade NAT (RFC 6598), not public either.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// control refuses connections to addresses that are not public, unless allowed.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errRefusedAddress, address)
	}
	a := ap.Addr().Unmap()
	for _, p := range f.Allow {
		if p.Contains(a) {
			return nil
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || cgnat.Contains(a) ||
		(a.Is4() && a.As4()[0] == 0) {
		return fmt.Errorf("%w: %s", errRefusedAddress, a)
	}
	return nil
}

// FetchImage implements parley.ImageFetcher.
func (f *Fetcher) FetchImage(ctx context.Context, rawURL string) (parley.ImageData, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return parley.ImageData{}, &parley.ProcessingError{Message: "the image URL is not an absolute http(s) URL"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return parley.ImageData{}, &parley.ProcessingError{Message: "the image URL is not usable"}
	}
	req.Header.Set("Accept", "image/png, image/jpeg, image/gif, image/webp")
	req.Header.Set("User-Agent", "Parley image fetcher")
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return parley.ImageData{}, ctx.Err()
		}
		var netErr net.Error
		switch {
		case errors.Is(err, errRefusedAddress):
			return parley.ImageData{}, &parley.ProcessingError{Message: fmt.Sprintf(
				"the image URL's host %s is a private, loopback or otherwise non-public address, which this server does not fetch from (fetch.allow_networks allows some)", u.Hostname())}
		case errors.As(err, &netErr) && netErr.Timeout():
			return parley.ImageData{}, &parley.ProcessingError{Message: fmt.Sprintf("fetching the image took longer than %s", f.Timeout), Retryable: true}
		}
		// The cause (a DNS failure naming this server's resolver, a dial error naming
		// its addresses) is for the log: the stored failure, which any reader of the
		// conversation sees, names the URL's host and nothing of the server.
		f.log().WarnContext(ctx, "image fetch failed", "host", u.Host, "err", err)
		return parley.ImageData{}, &parley.ProcessingError{Message: fmt.Sprintf("could not fetch the image from %s", u.Host), Retryable: true}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return parley.ImageData{}, &parley.ProcessingError{Message: fmt.Sprintf("fetching the image answered %s", resp.Status), Retryable: retry}
	}
	if resp.ContentLength > f.MaxBytes {
		return parley.ImageData{}, &parley.ProcessingError{Message: fmt.Sprintf("the image is %d bytes, more than the %d allowed", resp.ContentLength, f.MaxBytes)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, f.MaxBytes+1))
	if err != nil {
		return parley.ImageData{}, &parley.ProcessingError{Message: "the image download was cut off", Retryable: true}
	}
	if int64(len(b)) > f.MaxBytes {
		return parley.ImageData{}, &parley.ProcessingError{Message: fmt.Sprintf("the image is more than the %d bytes allowed", f.MaxBytes)}
	}
	return parley.ImageData{Bytes: b, MediaType: http.DetectContentType(b)}, nil
}
