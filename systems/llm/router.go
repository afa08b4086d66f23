package llm

// Hop routing values, as spelled in a tool's "hop_routing".
const (
	// HopTools marks a tool-call hop: it needs a tool-calling backend.
	HopTools = "ollama"
	// HopLanguage marks a pure language hop that prefers a small edge
	// model and falls back to the main backend.
	HopLanguage = "litert_preferred"
)

// Router picks the backend for a hop. Main is the tool-calling backend;
// Edge, when set, is the text backend that language hops prefer.
type Router struct {
	Main Backend
	Edge Backend
}

// NewRouter opens the main backend and, when edgeURL is not empty, the edge
// backend. Errors name the flag value that failed.
func NewRouter(mainURL, edgeURL string) (Router, error) {
	main, err := Open(mainURL)
	if err != nil {
		return Router{}, err
	}
	r := Router{Main: main}
	if edgeURL != "" {
		if r.Edge, err = Open(edgeURL); err != nil {
			return Router{}, err
		}
	}
	return r, nil
}

// For returns the backend for a hop with the given routing: the edge
// backend for language hops when one is configured, otherwise the main
// backend, otherwise the template backend.
func (r Router) For(routing string) Backend {
	if routing == HopLanguage && r.Edge != nil {
		return r.Edge
	}
	if r.Main != nil {
		return r.Main
	}
	return Template{}
}
