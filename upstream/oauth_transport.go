package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// bearerTransport sends every request to a server with custody's own
// access token for it, whatever Authorization the request carried (the
// requests are custody's own: an agent's token is never among them). A
// 401 answer drops the token and the request is sent once more with a
// new one, when its body can be sent again; a second 401 is an error
// wrapping ErrCredential, as is a token that cannot be had, and the
// session ends (failed), so that the server is down and says why.
type bearerTransport struct {
	cred   *credential
	next   http.RoundTripper
	failed func(error)
}

// RoundTrip implements http.RoundTripper.
func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	access, err := b.cred.token(r.Context())
	if err != nil {
		return nil, b.fail(r.Context(), err)
	}
	resp, err := b.next.RoundTrip(withBearer(r, access, r.Body))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	body, ok := replayable(r)
	if !ok {
		// The body is gone: the next request gets a new token.
		b.cred.rejected(access)
		return resp, nil
	}
	drain(resp)
	b.cred.rejected(access)
	if access, err = b.cred.token(r.Context()); err != nil {
		return nil, b.fail(r.Context(), err)
	}
	resp, err = b.next.RoundTrip(withBearer(r, access, body))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	drain(resp)
	b.cred.rejected(access)
	return nil, b.fail(r.Context(), fmt.Errorf("%w: the server refused a token just obtained from the authorization server (401): check oauth.scopes and oauth.resource, and that the server trusts that issuer", ErrCredential))
}

// fail ends the session for err, unless it is only the request's caller
// giving up, and returns err.
func (b bearerTransport) fail(ctx context.Context, err error) error {
	if ctx.Err() == nil && b.failed != nil {
		b.failed(err)
	}
	return err
}

// withBearer returns a copy of r carrying access, with body.
func withBearer(r *http.Request, access string, body io.ReadCloser) *http.Request {
	out := r.Clone(r.Context())
	out.Body = body
	out.Header.Set("Authorization", "Bearer "+access)
	return out
}

// replayable returns r's body to send again: none, or a new copy.
func replayable(r *http.Request) (io.ReadCloser, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return r.Body, true
	}
	if r.GetBody == nil {
		return nil, false
	}
	body, err := r.GetBody()
	return body, err == nil
}

// drain reads a little of a response that is not passed on and closes
// it, so that its connection may serve again.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
}

// useOAuth gives c the credential its server's OAuth declares; none
// without. A server at no URL, or an OAuth that Check refuses, is an
// error.
func (c *Conn) useOAuth(vault *TokenVault) error {
	o := c.srv.OAuth
	if o == nil {
		return nil
	}
	if c.srv.URL == "" {
		return fmt.Errorf("upstream %q: oauth is for a server at a url", c.srv.Name)
	}
	if err := o.Check(); err != nil {
		return fmt.Errorf("upstream %q: oauth: %w", c.srv.Name, err)
	}
	c.cred = newCredential(c.srv, vault, c.log, c.credentialFailed)
	return nil
}

// authorize obtains the server's token before a session is opened, so
// that a server without one is down for that reason, said plainly.
func (c *Conn) authorize(ctx context.Context) error {
	if c.cred == nil {
		return nil
	}
	if _, err := c.cred.token(ctx); err != nil {
		return fmt.Errorf("upstream %q: %w", c.srv.Name, err)
	}
	return nil
}

// bearer returns next with custody's token on every request when the
// server uses OAuth; next itself otherwise.
func (c *Conn) bearer(next http.RoundTripper) http.RoundTripper {
	if c.cred == nil {
		return next
	}
	return bearerTransport{cred: c.cred, next: next, failed: c.credentialFailed}
}

// credentialFailed ends the live session of a server whose token cannot
// be had: the server is down with err as the reason (Err, /healthz), the
// calls made meanwhile wait for it and fail as unavailable, and the
// supervisor opens a new session, with backoff, once a token is had.
func (c *Conn) credentialFailed(err error) {
	c.mu.Lock()
	s := c.session
	if s == nil || c.closed {
		c.mu.Unlock()
		return
	}
	c.session = nil
	c.down = fmt.Errorf("upstream %q: %w", c.srv.Name, err)
	c.back = make(chan struct{})
	c.mu.Unlock()
	c.log.Warn("upstream session ended: custody has no access token for it", "err", err)
	go s.Close()
	select {
	case c.restart <- struct{}{}:
	default:
	}
}

// notSent reports whether a failed request never reached the server's
// tool: it had no token, or the server refused the token.
func notSent(err error) bool { return errors.Is(err, ErrCredential) }
