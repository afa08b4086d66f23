package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/custody-dev/custody/web"
)

func TestParseTokens(t *testing.T) {
	tokens, err := web.ParseTokens(" bot:agent-secret-00000001 , ", "ana:operator-secret-0001,bo:operator-secret-0002", "")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tokens.Lookup("operator-secret-0002"); !ok || p.ID != "bo" || p.Role != web.RoleOperator {
		t.Errorf("lookup: %+v %v", p, ok)
	}
	for _, bad := range []string{"", "operator-secret-000", "agent-secret-00000001 "} {
		if p, ok := tokens.Lookup(bad); ok {
			t.Errorf("token %q found as %+v", bad, p)
		}
	}
	for _, tc := range []struct{ name, agent, operator, want string }{
		{"ErrNoColon", "bot-agent-secret-000001", "", "agent tokens, entry 1"},
		{"ErrShort", "", "ana:x,bo:short", "operator tokens, entry 1"},
		{"ErrNoID", ":agent-secret-00000001", "", "agent tokens, entry 1"},
		{"ErrDuplicate", "bot:same-secret-00000001", "ana:same-secret-00000001", `operator tokens, entry 1: token of "ana" is already given to agent "bot"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := web.ParseTokens(tc.agent, tc.operator, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to name %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret-0") {
				t.Errorf("the error shows a token: %v", err)
			}
		})
	}
}

func TestApps(t *testing.T) {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := web.PrincipalFrom(r.Context())
		w.Write([]byte(r.URL.Path + " for " + p.ID))
	})
	e := newEnv(t, web.App{Name: "peas", Title: "Pile-up alerts", Handler: app})
	res := e.do("GET", "/v1/console", operatorToken, nil)
	if !strings.Contains(string(res.Body), `{"name":"peas","title":"Pile-up alerts","path":"/apps/peas/"}`) {
		t.Errorf("console: %s", res.Body)
	}
	if res := e.do("GET", "/apps/peas/signs", auditorToken, nil); res.Status != 200 || string(res.Body) != "/signs for aud-1" {
		t.Errorf("app: %d %s", res.Status, res.Body)
	}
	if res := e.do("GET", "/apps/peas/", "", nil); res.Status != 401 {
		t.Errorf("app without a token: %d", res.Status)
	}
	if res := e.do("GET", "/apps/peas/", agentToken, nil); res.Status != 403 {
		t.Errorf("app with an agent token: %d", res.Status)
	}
}
