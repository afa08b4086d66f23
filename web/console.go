package web

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed console
var consoleFiles embed.FS

// mountConsole serves the embedded console at / and its login and logout
// endpoints. The static files hold no data, so they need no token; every
// API call the console makes does.
func (s *Server) mountConsole(mux *http.ServeMux) error {
	root, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		return fmt.Errorf("console files: %w", err)
	}
	static := http.FileServerFS(root)
	mux.Handle("/", noCache(static))
	mux.HandleFunc("GET /login", s.handleLogin)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	return nil
}

// noCache serves the static files for GET and HEAD only and makes browsers revalidate the console on every load, so an
// upgraded server never runs with a stale script. The service worker keeps
// its own copy for offline use.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".webmanifest") {
			w.Header().Set("Content-Type", "application/manifest+json")
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// handleLogin turns a token (?token= on the login link, or a token form
// field) of an operator or auditor into the console's HttpOnly cookie and
// sends the browser to the console. The cookie is SameSite=Strict, and
// cross-origin state changes are refused, so another site cannot act with
// it.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		token = r.PostFormValue("token")
	}
	p, ok := s.cfg.Tokens.Lookup(strings.TrimSpace(token))
	if !ok || p.Role == RoleAgent {
		s.log.Warn("console login refused", "known", ok, "role", p.Role)
		http.Redirect(w, r, "/?login=failed", http.StatusSeeOther)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: token, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: 30 * 24 * 3600,
	})
	s.log.Info("console login", "principal", p.ID, "role", p.Role)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// handleLogout clears the console cookie.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// consoleResponse is the body of GET /v1/console: who is signed in and
// which apps to link.
type consoleResponse struct {
	Principal Principal `json:"principal"`
	Apps      []appLink `json:"apps"`
}

type appLink struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Path  string `json:"path"`
}

func (s *Server) handleConsole(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	resp := consoleResponse{Principal: p, Apps: []appLink{}}
	for _, a := range s.cfg.Apps {
		resp.Apps = append(resp.Apps, appLink{Name: a.Name, Title: a.Title, Path: "/apps/" + a.Name + "/"})
	}
	writeJSON(w, http.StatusOK, resp)
}

// validAppName reports whether name is one lower-case URL path segment.
func validAppName(name string) bool {
	if name == "" || name[0] == '-' || name[0] == '_' {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// mountApps mounts every app at /apps/{Name}/ for operators and auditors.
func (s *Server) mountApps(mux *http.ServeMux) error {
	seen := map[string]bool{}
	for _, a := range s.cfg.Apps {
		if !validAppName(a.Name) || a.Handler == nil || seen[a.Name] {
			return fmt.Errorf("web: app %q: want a unique lower-case name and a handler", a.Name)
		}
		seen[a.Name] = true
		prefix := "/apps/" + a.Name
		h := http.StripPrefix(prefix, a.Handler)
		read, write := s.require(h.ServeHTTP, readers()...), s.require(h.ServeHTTP, RoleOperator)
		mux.HandleFunc(prefix+"/", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				read(w, r)
				return
			}
			write(w, r) // a change of state is an operator's act
		})
	}
	return nil
}
