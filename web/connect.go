package web

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"time"

	_ "embed"

	"github.com/custody-dev/custody"
)

// An upstream MCP server that takes only a person's token (the
// authorization code grant) is connected once by an operator:
// POST /v1/upstreams/{name}/connect answers the authorization server's
// URL, where the console sends the operator's browser; the authorization
// server sends it back to ConnectCallbackPath with a code, which custody
// redeems. The connection goes on the ledger (KindUpstreamConnected,
// naming the operator) before its token is used.
const (
	// ConnectCallbackPath is where the authorization server sends the
	// browser back: the console's public URL + this is the redirect URI
	// custody registers (or that is registered for its client).
	ConnectCallbackPath = "/upstreams/oauth/callback"
	// ConnectLifetime is how long an operator has to authorize at the
	// authorization server once sent there.
	ConnectLifetime = 10 * time.Minute
)

// KindUpstreamConnected records an operator's connection of an upstream
// (which upstream, the authorization server, the client, the scopes;
// never a token or a secret).
const KindUpstreamConnected = "upstream.connected"

// RefUpstream names the upstream of an upstream.connected entry.
const RefUpstream = "upstream"

// connectCookie binds a connection to the browser that started it, as
// oidcCookie binds a sign-in: the state and the PKCE verifier are derived
// from its value, and the store keeps, under its hash, which operator
// started it for which upstream. SameSite=Lax: the authorization
// server's answer is a cross-site navigation.
const connectCookie = "custody_upstream_connect"

// The state namespaces of the connections: each started one, and the
// count of its uses (once only).
const (
	nsConnects    = "upstream_connects"
	nsConnectUses = "upstream_connect_uses"
)

// Connector connects the upstreams that take a person's authorization.
type Connector interface {
	// AuthorizationURL returns the authorization server's page for a
	// connection of upstream, which sends the browser back to
	// redirectURI with state and a code; ENOTFOUND when upstream takes no
	// such authorization.
	AuthorizationURL(ctx context.Context, upstream, redirectURI, state, verifier string) (string, error)
	// Connect redeems code with the connection's verifier, has record put
	// the connection (a JSON value, no secret in it) on the ledger, and
	// only then uses its token.
	Connect(ctx context.Context, upstream, redirectURI, code, verifier string, record func(connection any) error) error
}

// connectDoc is a started connection as the state keeps it.
type connectDoc struct {
	Upstream     string `json:"upstream"`
	Operator     string `json:"operator"`
	OperatorName string `json:"operator_name,omitempty"`
	RedirectURI  string `json:"redirect_uri"`
	Expires      string `json:"expires"`
}

// connectRedirect is the redirect URI of connections started by r: the
// configured one, else the console's own URL as r reached it.
func (s *Server) connectRedirect(r *http.Request) string {
	if s.cfg.ConnectRedirect != "" {
		return s.cfg.ConnectRedirect
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + ConnectCallbackPath
}

// handleConnect serves POST /v1/upstreams/{name}/connect: a connection,
// bound to this browser by its cookie and kept in the store for
// ConnectLifetime, and the URL to send the browser to.
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Connector == nil {
		s.writeError(w, r, custody.Errorf(custody.ENOTFOUND, "no upstream here connects by the authorization code grant"))
		return
	}
	name := r.PathValue("name")
	p, _ := PrincipalFrom(r.Context())
	pre := secret()
	redirect := s.connectRedirect(r)
	to, err := s.cfg.Connector.AuthorizationURL(r.Context(), name, redirect, derive(pre, "state"), derive(pre, "pkce"))
	if err != nil {
		s.log.Warn("an upstream connection cannot start", "upstream", name, "principal", p.ID, "err", err)
		if custody.ErrorKind(err) == custody.EINTERNAL {
			err = custody.Errorf(custody.EUNAVAILABLE, "the connection of %s cannot start: %v", name, err)
		}
		s.writeError(w, r, err)
		return
	}
	doc, _ := json.Marshal(connectDoc{Upstream: name, Operator: p.ID, OperatorName: p.Name, RedirectURI: redirect,
		Expires: custody.FormatTime(s.cfg.Now().Add(ConnectLifetime))})
	if err := s.sessions.state.PutState(r.Context(), nsConnects, stateKey(pre), doc); err != nil {
		s.writeError(w, r, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the connection cannot be kept", Err: err})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: connectCookie, Value: pre, Path: ConnectCallbackPath, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode, MaxAge: int(ConnectLifetime / time.Second)})
	s.log.Info("upstream connection started", "upstream", name, "principal", p.ID)
	writeJSON(w, http.StatusOK, map[string]string{"upstream": name, "authorization_url": to})
}

// handleConnectCallback serves GET ConnectCallbackPath, the authorization
// server's answer: it must be for the connection this browser's cookie
// started (the state), unexpired and not used before; its code is
// redeemed with the connection's PKCE verifier, and the connection is
// recorded under the operator who started it.
func (s *Server) handleConnectCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, cookieErr := r.Cookie(connectCookie)
	http.SetCookie(w, &http.Cookie{Name: connectCookie, Path: ConnectCallbackPath, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	switch {
	case q.Get("error") != "":
		s.log.Warn("upstream connection refused by the authorization server", "error", q.Get("error"))
		s.renderConnected(w, http.StatusUnauthorized, connectView{Problem: "The authorization server did not authorize custody: " +
			q.Get("error") + describe(q.Get("error_description"))})
		return
	case cookieErr != nil || c.Value == "":
		s.renderConnected(w, http.StatusBadRequest, connectView{Problem: "This connection was not started in this browser, or took longer than " +
			ConnectLifetime.String() + ". Please press Connect again."})
		return
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(derive(c.Value, "state"))) != 1:
		s.log.Warn("upstream connection refused: the state is not this browser's connection's")
		s.renderConnected(w, http.StatusForbidden, connectView{Problem: "This answer of the authorization server is not for the connection this browser started. Please press Connect again."})
		return
	case q.Get("code") == "":
		s.renderConnected(w, http.StatusBadRequest, connectView{Problem: "The authorization server sent no code. Please press Connect again."})
		return
	}
	d, err := s.useConnection(r.Context(), c.Value)
	if err != nil {
		s.log.Warn("upstream connection refused", "err", err)
		s.renderConnected(w, statusOf(err), connectView{Problem: custody.ErrorMessage(err) + "."})
		return
	}
	record := func(conn any) error { return s.recordConnection(r.Context(), d, conn) }
	if err := s.cfg.Connector.Connect(r.Context(), d.Upstream, d.RedirectURI, q.Get("code"), derive(c.Value, "pkce"), record); err != nil {
		s.log.Warn("upstream connection failed", "upstream", d.Upstream, "principal", d.Operator, "err", err)
		s.renderConnected(w, http.StatusBadGateway, connectView{Upstream: d.Upstream, Problem: "custody could not complete the connection of " +
			d.Upstream + ": " + err.Error()})
		return
	}
	s.log.Info("upstream connected", "upstream", d.Upstream, "principal", d.Operator)
	s.renderConnected(w, http.StatusOK, connectView{Upstream: d.Upstream, Connected: true})
}

// useConnection returns the connection kept under the hash of pre and
// counts its use: a connection serves one answer, on any gateway sharing
// the store, before it expires.
func (s *Server) useConnection(ctx context.Context, pre string) (connectDoc, error) {
	raw, err := s.sessions.state.State(ctx, nsConnects, stateKey(pre))
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return connectDoc{}, custody.Errorf(custody.EINVALID, "custody knows no such connection: please press Connect again")
	}
	if err != nil {
		return connectDoc{}, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the connection cannot be read", Err: err}
	}
	var d connectDoc
	expires, perr := time.Time{}, json.Unmarshal(raw, &d)
	if perr == nil {
		expires, perr = time.Parse(custody.TimeFormat, d.Expires)
	}
	if perr != nil {
		return connectDoc{}, &custody.Error{Kind: custody.EINTERNAL, Message: "the connection kept is damaged", Err: perr}
	}
	if !s.cfg.Now().Before(expires) {
		return connectDoc{}, custody.Errorf(custody.EINVALID, "the connection took longer than %s: please press Connect again", ConnectLifetime)
	}
	n, err := s.sessions.state.IncrState(ctx, nsConnectUses, stateKey(pre), 1)
	if err != nil {
		return connectDoc{}, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the connection cannot be used", Err: err}
	}
	if n != 1 {
		return connectDoc{}, custody.Errorf(custody.EINVALID, "this connection was answered already: please press Connect again")
	}
	return d, nil
}

// recordConnection puts conn on the ledger under the operator of d.
func (s *Server) recordConnection(ctx context.Context, d connectDoc, conn any) error {
	body, err := json.Marshal(map[string]any{"connection": conn, "operator_name": d.OperatorName})
	if err != nil {
		return err
	}
	_, err = s.cfg.Ledger.Append(context.WithoutCancel(ctx), custody.Entry{At: custody.FormatTime(s.cfg.Now()), Kind: KindUpstreamConnected,
		Actor: d.Operator, Refs: map[string]string{RefUpstream: d.Upstream}, Body: body})
	if err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "evidence ledger unavailable", Err: fmt.Errorf("append %s: %w", KindUpstreamConnected, err)}
	}
	return nil
}

// statusOf is the HTTP status of a custody error.
func statusOf(err error) int {
	var ce *custody.Error
	if errors.As(err, &ce) && ce.Kind == custody.EUNAVAILABLE {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

//go:embed connected.html
var connectedHTML string

var connectedPage = template.Must(template.New("connected").Parse(connectedHTML))

// connectView is what the connection's page shows.
type connectView struct {
	Upstream  string
	Connected bool
	Problem   string
}

// renderConnected shows how the connection ended.
func (s *Server) renderConnected(w http.ResponseWriter, status int, v connectView) {
	pageHeaders(w, status)
	if err := connectedPage.Execute(w, v); err != nil {
		s.log.Error("render the connection page", "err", err)
	}
}
