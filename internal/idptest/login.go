package idptest

import (
	"context"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is a person who signs in at the provider's login page.
type User struct {
	// ID is the subject of the person's ID tokens.
	ID, Username, Password string
	// Name is the display name (the profile scope's name claim).
	Name, Email string
	// Groups go into the "groups" claim of the ID token and userinfo.
	Groups []string
}

// ConsoleClient is a confidential web client that signs people in by the
// authorization code flow, as custody's console does. As zitadel does by
// default, its ID tokens carry the profile and email claims only when
// UserinfoInIDToken is set; else they are at the userinfo endpoint.
type ConsoleClient struct {
	ID, Secret        string
	RedirectURIs      []string
	UserinfoInIDToken bool
}

// AddUser registers u.
func (o *OP) AddUser(u User) {
	o.st.users.mu.Lock()
	defer o.st.users.mu.Unlock()
	o.st.users.m[u.ID] = &u
}

// AddConsoleClient registers c.
func (o *OP) AddConsoleClient(c ConsoleClient) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	o.st.consoles[c.ID] = &consoleClient{Client: storage.WebClient(c.ID, c.Secret, c.RedirectURIs...), secret: c.Secret, c: c}
}

// consoleClient is a ConsoleClient as the OP sees it.
type consoleClient struct {
	*storage.Client
	secret string
	c      ConsoleClient
}

func (c *consoleClient) IDTokenUserinfoClaimsAssertion() bool { return c.c.UserinfoInIDToken }

func (c *consoleClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode}
}

func (s *store) console(id string) *consoleClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consoles[id]
}

// users is the people of the provider, as the example storage reads them.
type users struct {
	mu sync.Mutex
	m  map[string]*User
}

func (u *users) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	return exampleUser(u.m[id])
}

func (u *users) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range u.m {
		if p.Username == name {
			return exampleUser(p)
		}
	}
	return nil
}

func (u *users) ExampleClientID() string { return storage.ServiceUserID }

func (u *users) groups(id string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p := u.m[id]; p != nil {
		return slices.Clone(p.Groups)
	}
	return nil
}

// exampleUser is p as the example storage knows people; its name claim
// is FirstName + " " + LastName, so the whole name goes into FirstName
// and the space is trimmed by setUserinfo's caller (see withGroups).
func exampleUser(p *User) *storage.User {
	if p == nil {
		return nil
	}
	return &storage.User{ID: p.ID, Username: p.Username, Password: p.Password, FirstName: p.Name,
		Email: p.Email, EmailVerified: true, PreferredLanguage: language.English}
}

// withGroups completes what the example storage says of a person: the
// display name as given, and the groups claim.
func (s *store) withGroups(info *oidc.UserInfo, userID string) {
	info.Name = strings.TrimSpace(info.Name)
	if g := s.users.groups(userID); len(g) > 0 {
		info.AppendClaims("groups", g)
	}
}

func (s *store) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	s.withGroups(info, req.GetSubject())
	return nil
}

func (s *store) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	s.withGroups(info, subject)
	return nil
}

// loginPath is the example clients' login page.
const loginPath = "/login/username"

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · test IdP</title></head>
<body><main><h1>Test IdP</h1>
{{if .Error}}<p role="alert" id="idp-error">{{.Error}}</p>{{end}}
<form method="post" action="` + loginPath + `">
<input type="hidden" name="id" value="{{.ID}}">
<label>Username <input id="username" name="username" autocomplete="username"></label>
<label>Password <input id="password" name="password" type="password" autocomplete="current-password"></label>
<button type="submit" id="idp-submit">Sign in</button>
</form></main></body></html>`))

// handleLogin serves the login page (GET, with the OP's authRequestID)
// and checks what it posts: the right password completes the auth
// request, and the browser goes back to the OP, which sends it on to the
// client's redirect URI with a code.
func (o *OP) handleLogin(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := r.Form.Get("authRequestID")
	var problem string
	if r.Method == http.MethodPost {
		id = r.PostForm.Get("id")
		err := o.st.CheckUsernamePassword(r.PostForm.Get("username"), r.PostForm.Get("password"), id)
		if err == nil {
			http.Redirect(w, r, o.callback+"?id="+url.QueryEscape(id), http.StatusFound)
			return
		}
		problem = err.Error()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	loginPage.Execute(w, struct{ ID, Error string }{id, problem})
}

// Login signs username in, without a browser, through the provider's
// login page: it opens authURL (the provider's authorization endpoint
// with a client's request), posts the login form, and returns the URL
// the provider sends the browser back to, which it does not open (the
// client's redirect URI with code and state, or error). jar carries the
// browser's cookies at the provider; nil starts afresh.
func (o *OP) Login(t testing.TB, jar http.CookieJar, authURL, username, password string) *url.URL {
	t.Helper()
	if jar == nil {
		jar, _ = cookiejar.New(nil)
	}
	var back *url.URL
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if !strings.HasPrefix(req.URL.String(), o.URL+"/") {
			back = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if back != nil {
		return back // the provider refused the request outright
	}
	id := res.Request.URL.Query().Get("authRequestID")
	if id == "" {
		t.Fatalf("the provider showed no login page for %s: %s at %s", authURL, res.Status, res.Request.URL.Path)
	}
	res, err = c.PostForm(o.URL+loginPath, url.Values{"id": {id}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if back == nil {
		t.Fatalf("the provider did not send %s back to the client: %s at %s", username, res.Status, res.Request.URL.Path)
	}
	return back
}
