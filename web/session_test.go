package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/web"
)

// anotherServer starts a second server on e's store, as another gateway
// sharing it (or the same one after a restart) would, with tokens and
// sessions kept in state.
func anotherServer(t *testing.T, e *env, tokens web.Tokens, state custody.StateStore) *httptest.Server {
	t.Helper()
	s, err := web.New(web.Config{Gateway: e.gw, Approvals: e.approvals, Ledger: e.ledger, Tokens: tokens,
		Sessions: state, Now: e.clock.Now})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func testTokens(t *testing.T, operators, auditors string) web.Tokens {
	t.Helper()
	tokens, err := web.ParseTokens("agent-1:"+agentToken, operators, auditors)
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// TestSessionSharedByServers: a session opened on one server is honoured
// by another on the same store, and its sign-out there ends it here.
func TestSessionSharedByServers(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	c := signIn(t, b, operatorToken)
	other := newBrowserClientAt(t, e, anotherServer(t, e, testTokens(t, "op-1:"+operatorToken, "aud-1:"+auditorToken), e.db))
	if st := other.withSession("GET", "/v1/console", c); st != 200 {
		t.Fatalf("the session on another server: %d", st)
	}
	if st := other.withSession("POST", "/logout", c); st != http.StatusSeeOther {
		t.Fatalf("logout on the other server: %d", st)
	}
	if st := b.withSession("GET", "/v1/console", c); st != http.StatusUnauthorized {
		t.Errorf("the session after its sign-out on another server: %d, want 401", st)
	}
}

// TestLoginCodeOnceAcrossServers: a code made on one server opens one
// session, wherever it is used, and only once.
func TestLoginCodeOnceAcrossServers(t *testing.T) {
	e := newEnv(t)
	code := loginLink(t, e, operatorToken)
	other := newBrowserClientAt(t, e, anotherServer(t, e, testTokens(t, "op-1:"+operatorToken, ""), e.db))
	if _, body := other.page("/login?code=" + url.QueryEscape(code)); !strings.Contains(body, "op-1") {
		t.Fatalf("the other server's sign-in page does not name the code's operator: %s", body)
	}
	res, body := other.post(url.Values{"code": {code}})
	c := cookieNamed(res, "custody_session")
	if res.StatusCode != http.StatusSeeOther || c == nil {
		t.Fatalf("the code on the other server: %d %s", res.StatusCode, body)
	}
	b := newBrowserClient(t, e)
	b.page("/login")
	if res, _ := b.post(url.Values{"code": {code}}); res.StatusCode != http.StatusUnauthorized || cookieNamed(res, "custody_session") != nil {
		t.Errorf("the code used again on the first server: %d, want 401 and no session", res.StatusCode)
	}
	if st := b.withSession("GET", "/v1/console", c); st != 200 {
		t.Errorf("the session the code opened, on the first server: %d", st)
	}
}

// TestSessionEndsWithItsPrincipal: a session stands for a principal in a
// role; a server whose tokens no longer give it that role honours it not.
func TestSessionEndsWithItsPrincipal(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	c := signIn(t, b, operatorToken)
	for name, tokens := range map[string]web.Tokens{
		"removed":      testTokens(t, "op-2:other-operator-token-0123", ""),
		"now auditor":  testTokens(t, "", "op-1:"+operatorToken),
		"new token":    testTokens(t, "op-1:replaced-operator-token-0123", ""),
		"still holder": testTokens(t, "op-1:"+operatorToken, ""),
	} {
		want := http.StatusUnauthorized
		if name == "new token" || name == "still holder" {
			want = 200 // the principal and its role stand; its token is not the session
		}
		other := newBrowserClientAt(t, e, anotherServer(t, e, tokens, e.db))
		if st := other.withSession("GET", "/v1/console", c); st != want {
			t.Errorf("%s: the session: %d, want %d", name, st, want)
		}
	}
}

// failingState is a state store whose reads and writes fail as a store
// that cannot be reached does.
type failingState struct{ custody.StateStore }

func (failingState) State(context.Context, string, string) (json.RawMessage, error) {
	return nil, custody.Errorf(custody.EUNAVAILABLE, "store unreachable")
}

func (failingState) PutState(context.Context, string, string, json.RawMessage) error {
	return custody.Errorf(custody.EUNAVAILABLE, "store unreachable")
}

// TestSessionsUnavailable: when the sign-ins cannot be read, a session
// is answered 503, not taken for signed out or let through; a sign-in
// opens nothing; bearer tokens still work.
func TestSessionsUnavailable(t *testing.T) {
	e := newEnv(t)
	c := signIn(t, newBrowserClient(t, e), operatorToken)
	srv := anotherServer(t, e, testTokens(t, "op-1:"+operatorToken, ""), failingState{e.db})
	b := newBrowserClientAt(t, e, srv)
	if st := b.withSession("GET", "/v1/console", c); st != http.StatusServiceUnavailable {
		t.Errorf("a session while the sign-ins are unreadable: %d, want 503", st)
	}
	b.page("/login")
	res, _ := b.post(url.Values{"token": {operatorToken}})
	if res.StatusCode != http.StatusServiceUnavailable || cookieNamed(res, "custody_session") != nil {
		t.Errorf("a sign-in while the sign-ins cannot be kept: %d, want 503 and no session", res.StatusCode)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/console", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	if res, _ := b.send(req); res.StatusCode != 200 {
		t.Errorf("a bearer token while the sign-ins are unreadable: %d", res.StatusCode)
	}
}

// TestNewRequiresSessions: a server without somewhere to keep sign-ins
// is refused.
func TestNewRequiresSessions(t *testing.T) {
	e := newEnv(t)
	_, err := web.New(web.Config{Gateway: e.gw, Approvals: e.approvals, Ledger: e.ledger, Tokens: testTokens(t, "", "")})
	if err == nil || !strings.Contains(err.Error(), "Sessions") {
		t.Fatalf("web.New without Sessions: %v", err)
	}
}
