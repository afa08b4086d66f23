package web

// OpenAPI returns the OpenAPI 3.1 document of the /v1 API, the one
// GET /v1/openapi.json serves.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// APIRoutes returns the method and path of every route of the API table,
// for the tests that hold the OpenAPI document to it.
func APIRoutes() []string {
	var out []string
	for _, rt := range (&Server{}).api() {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}
