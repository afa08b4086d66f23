package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/jsonschema/v6"

	"github.com/custody-dev/custody/web"
)

// openAPIDoc is the parts of the OpenAPI document the tests read.
type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(web.OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	return doc
}

// TestOpenAPIMatchesRoutes holds the OpenAPI document to the routes the
// package registers under /v1, both ways, and probes each documented operation: the
// server must route it (not the catch-all 404, not 405).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	var routes, documented []string
	for _, r := range web.APIRoutes() {
		if strings.Contains(r, " /v1/") {
			routes = append(routes, r)
		}
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(routes)
	slices.Sort(documented)
	if !slices.Equal(routes, documented) {
		t.Errorf("the API's routes and openapi.json differ:\nserver:   %v\ndocument: %v", routes, documented)
	}

	e := newEnv(t)
	for _, op := range documented {
		method, path, _ := strings.Cut(op, " ")
		path = strings.NewReplacer("{name}", "get_time", "{id}", "no-such-approval").Replace(path)
		if strings.HasSuffix(path, "/v1/events") {
			continue // a stream that does not end; its routing is tested in events_test.go
		}
		var body []byte
		if method == "POST" {
			body = []byte(`{}`)
		}
		res := e.do(method, path, operatorToken, body)
		if res.Status == http.StatusMethodNotAllowed || (res.Status == http.StatusNotFound && bytes.Contains(res.Body, []byte("no such endpoint"))) {
			t.Errorf("%s: the server does not route it: %d %s", op, res.Status, res.Body)
		}
	}
}

// schemaOf compiles the named component schema of the OpenAPI document.
func schemaOf(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(web.OpenAPI()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const id = "https://custody.dev/openapi.json"
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id + "#/components/schemas/" + name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

// conforms checks that a response body is an instance of the named schema.
func conforms(t *testing.T, what string, body []byte, schema string) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := schemaOf(t, schema).Validate(v); err != nil {
		t.Errorf("%s does not match the document's %s: %v\n%s", what, schema, err, body)
	}
}

// TestOpenAPIDescribesResponses checks real answers against the schemas
// the document gives them.
func TestOpenAPIDescribesResponses(t *testing.T) {
	e := newEnv(t)
	ok := e.call("t-doc", "get_time", `{"zone":"UTC"}`)
	if ok.Status != 200 {
		t.Fatalf("call: %d %s", ok.Status, ok.Body)
	}
	conforms(t, "POST /v1/calls", ok.Body, "CallResult")
	conforms(t, "a refused call", e.call("t-doc", "get_time", `{"zone":7}`).Body, "ErrorBody")
	conforms(t, "GET /v1/ledger", e.do("GET", "/v1/ledger", auditorToken, nil).Body, "LedgerPage")
	conforms(t, "GET /v1/ledger/verify", e.do("GET", "/v1/ledger/verify", auditorToken, nil).Body, "VerifyReport")
	conforms(t, "GET /v1/tools/get_time", e.do("GET", "/v1/tools/get_time", agentToken, nil).Body, "ToolDetail")
}

// TestToolSchemas checks GET /v1/tools/{name}: the schemas the gateway
// validates against, for tools the caller may see only.
func TestToolSchemas(t *testing.T) {
	e := newEnv(t)
	res := e.do("GET", "/v1/tools/get_time", agentToken, nil)
	if res.Status != 200 {
		t.Fatalf("GET /v1/tools/get_time: %d %s", res.Status, res.Body)
	}
	var d struct {
		Tool struct {
			Name string `json:"name"`
		} `json:"tool"`
		Input  map[string]any `json:"input_schema"`
		Output map[string]any `json:"output_schema"`
	}
	if err := json.Unmarshal(res.Body, &d); err != nil {
		t.Fatal(err)
	}
	if d.Tool.Name != "get_time" || d.Input["type"] != "object" || d.Output["type"] != "object" {
		t.Errorf("tool detail: %s", res.Body)
	}
	// The input schema served is the one the gateway enforces: an
	// argument it does not allow is refused by both.
	in, _ := json.Marshal(d.Input)
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"zone":7}`))
	c := jsonschema.NewCompiler()
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(in))
	if err := c.AddResource("tool.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("tool.json")
	if err != nil {
		t.Fatalf("compile the served input schema: %v", err)
	}
	if s.Validate(v) == nil {
		t.Error("the served input schema accepts what the gateway refuses")
	}
	if res := e.call("t-zone", "get_time", `{"zone":7}`); res.Status != 400 {
		t.Errorf("the gateway accepted what the served schema refuses: %d", res.Status)
	}

	for _, tt := range []struct{ path, token string }{
		{"/v1/tools/no_such_tool", operatorToken},
		{"/v1/tools/get_time", ""},
	} {
		res := e.do("GET", tt.path, tt.token, nil)
		if tt.token == "" && res.Status != 401 || tt.token != "" && res.Status != 404 {
			t.Errorf("GET %s: %d %s", tt.path, res.Status, res.Body)
		}
	}
	if res := e.do("GET", "/v1/openapi.json", "", nil); res.Status != 200 || !bytes.Equal(res.Body, web.OpenAPI()) {
		t.Errorf("GET /v1/openapi.json: %d", res.Status)
	}
}
