package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
)

// MaxShownChars bounds any one text the console shows (an instruction, a
// message, a path, a fact); the stores bound them already, this keeps a
// page's weight bounded whatever a store holds. A longer text is cut at
// a character boundary and marked.
const MaxShownChars = 4000

// Page is what every page template gets.
type Page struct {
	Title  string
	Viewer Viewer
	// Nav names the active navigation entry.
	Nav string
	// Data is the page's own model.
	Data any
	// OAuth: the built-in authorization server runs (its clients page is
	// in the navigation).
	OAuth bool
}

// render writes page name with data as a full HTML page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) error {
	t, err := s.pageTemplate(name)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", Page{Title: title, Viewer: viewerOf(r), Nav: nav, Data: data, OAuth: s.opts.OAuth != nil}); err != nil {
		return failure.Wrap(failure.Internal, err, "render %s", name)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	return nil
}

// ErrorData is the model of the error page.
type ErrorData struct {
	Status  int
	Kind    failure.Kind
	Message string
}

// fail answers the request with the error page for err. An unknown or
// foreign session is one not_found answer (404), so existence does not
// leak.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	k := failure.KindOf(err)
	status := httpserver.StatusFor(k)
	if k == failure.UnknownSessionID || k == failure.SessionAuthorityDenied {
		status, k = http.StatusNotFound, failure.NotFound
		err = failure.New(failure.NotFound, "no such session")
	}
	if status >= 500 {
		s.log.Error("console", "path", r.URL.Path, "err", err)
	}
	msg := failure.MessageOf(err)
	if k == failure.Internal {
		msg = "the console could not build this page"
	}
	if rerr := s.render(w, r, status, "error", http.StatusText(status), "", ErrorData{Status: status, Kind: k, Message: msg}); rerr != nil {
		http.Error(w, http.StatusText(status), status)
	}
}

// funcs are the template functions of every page.
var funcs = template.FuncMap{
	"clip":     clip,
	"short":    short,
	"when":     when,
	"ago":      ago,
	"duration": duration,
	"join":     strings.Join,
	"add":      func(a, b int) int { return a + b },
	"sub":      func(a, b int) int { return a - b },
}

// RowTextChars bounds the text of one timeline row on a page (the
// handoff brief's excerpt length); the export shows up to MaxShownChars.
const RowTextChars = 600

// short cuts s to RowTextChars characters.
func short(s string) string { return cut(s, RowTextChars) }

// clip cuts s to MaxShownChars characters.
func clip(s string) string { return cut(s, MaxShownChars) }

// cut cuts s to n characters, saying how much is left out.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	c := 0
	for i := range s {
		if c == n {
			return s[:i] + fmt.Sprintf(" … [%d more bytes not shown]", len(s)-i)
		}
		c++
	}
	return s
}

// exportData is the model of the export file.
type exportData struct {
	V   *SessionView
	CSS template.CSS
	At  string
}

// renderExport renders v as the self-contained export file.
func (s *Server) renderExport(v *SessionView) ([]byte, error) {
	css, err := staticFS.ReadFile("static/console.css")
	if err != nil {
		return nil, failure.Wrap(failure.Internal, err, "read stylesheet")
	}
	sets, err := s.templates()
	if err != nil {
		return nil, failure.Wrap(failure.Internal, err, "console templates")
	}
	var buf bytes.Buffer
	// The stylesheet is the server's own embedded file, never data.
	if err := sets.export.ExecuteTemplate(&buf, "export", exportData{V: v, CSS: template.CSS(css), At: when(s.opts.Now())}); err != nil {
		return nil, failure.Wrap(failure.Internal, err, "render export")
	}
	return buf.Bytes(), nil
}

// when formats t in UTC to the second ("" for the zero time).
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago is a short "5m ago" relative to now.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return duration(time.Since(t).Milliseconds()) + " ago"
}

// duration formats milliseconds shortly.
func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
