package web

// APIRoutes returns the method and path of every route of the API table,
// for the tests that hold the OpenAPI document to it.
func APIRoutes() []string {
	var out []string
	for _, rt := range (&Server{}).api() {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}
