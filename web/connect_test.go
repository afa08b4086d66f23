package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/upstream"
	"github.com/custody-dev/custody/web"
)

// connConnector is one upstream connection as web.Connector.
type connConnector struct{ c *upstream.Conn }

func (k connConnector) AuthorizationURL(ctx context.Context, name, redirectURI, state, verifier string) (string, error) {
	if name != k.c.Name() {
		return "", custody.Errorf(custody.ENOTFOUND, "no upstream %q", name)
	}
	return k.c.AuthorizationURL(ctx, redirectURI, state, verifier)
}

func (k connConnector) Connect(ctx context.Context, name, redirectURI, code, verifier string, record func(any) error) error {
	return k.c.Connect(ctx, redirectURI, code, verifier, func(cn upstream.Connection) error { return record(cn) })
}

// connectEnv is the web server with a real upstream that takes a
// person's token of a real provider, which registers custody.
type connectEnv struct {
	*env
	op *idptest.OP
	c  *upstream.Conn
}

func newConnectEnv(t *testing.T) *connectEnv {
	t.Helper()
	op := idptest.Start(t, "")
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	p := op.Protect(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	op.OfferRegistration(idptest.App{Audience: []string{p.URL}})
	op.AddUser(idptest.User{ID: "u-nia", Username: "nia", Password: "nia-password"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := upstream.Dial(ctx, upstream.Server{Name: "notes", URL: p.URL, OAuth: &upstream.OAuth{Grant: upstream.GrantAuthorizationCode}},
		upstream.ConnOptions{MaxBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e := newEnvWith(t, func(cfg *web.Config) { cfg.Connector = connConnector{c} })
	return &connectEnv{env: e, op: op, c: c}
}

// start starts a connection in a browser of its own and returns it and
// the provider's URL.
func (e *connectEnv) start(t *testing.T) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/upstreams/notes/connect", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		URL string `json:"authorization_url"`
	}
	if json.NewDecoder(res.Body).Decode(&out); res.StatusCode != 200 || out.URL == "" {
		t.Fatalf("connect: %d", res.StatusCode)
	}
	return b, out.URL
}

// answer signs nia in at the provider and opens the answer in b.
func (e *connectEnv) answer(t *testing.T, b *http.Client, to string) int {
	t.Helper()
	back := e.op.Login(t, nil, to, "nia", "nia-password")
	res, err := b.Get(back.String())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestConnectExpired: an answer that comes after ConnectLifetime
// connects nothing.
func TestConnectExpired(t *testing.T) {
	e := newConnectEnv(t)
	b, to := e.start(t)
	e.clock.Add(web.ConnectLifetime + time.Second)
	if code := e.answer(t, b, to); code != http.StatusBadRequest {
		t.Fatalf("a late answer: %d", code)
	}
	if len(e.entries("", web.KindUpstreamConnected)) != 0 || e.c.Err() == nil {
		t.Fatal("a late answer connected the upstream")
	}
}

// TestConnectLedgerDown: with the ledger down the connection is refused
// and nothing is held; once it is back, a new one connects and is
// recorded under the operator.
func TestConnectLedgerDown(t *testing.T) {
	e := newConnectEnv(t)
	b, to := e.start(t)
	e.ledger.Down.Store(true)
	code := e.answer(t, b, to)
	e.ledger.Down.Store(false)
	if code != http.StatusBadGateway || e.c.Err() == nil {
		t.Fatalf("with the ledger down: %d, upstream %v", code, e.c.Err())
	}
	b, to = e.start(t)
	if code := e.answer(t, b, to); code != http.StatusOK {
		t.Fatalf("once the ledger is back: %d", code)
	}
	es := e.entries("", web.KindUpstreamConnected)
	if len(es) != 1 || es[0].Actor != "op-1" || es[0].Refs[web.RefUpstream] != "notes" {
		t.Fatalf("entries: %+v", es)
	}
	deadline := time.Now().Add(60 * time.Second)
	for e.c.Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream did not come up: %v", e.c.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConnectWithoutConnector: with no upstream to connect, the route
// answers 404, and the callback refuses what it is sent.
func TestConnectWithoutConnector(t *testing.T) {
	e := newEnv(t)
	if r := e.do(http.MethodPost, "/v1/upstreams/notes/connect", operatorToken, []byte("{}")); r.Status != http.StatusNotFound {
		t.Fatalf("connect: %d %s", r.Status, r.Body)
	}
	if r := e.do(http.MethodGet, web.ConnectCallbackPath+"?code=x&state=y", "", nil); r.Status != http.StatusBadRequest {
		t.Fatalf("callback: %d", r.Status)
	}
}
