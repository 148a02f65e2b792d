package ctl

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every endpoint answers the methods it takes and, for any other, 405
// with an Allow header and the API's JSON error; a path that is no
// endpoint is not_found (404) whatever the method. HEAD is a method no
// endpoint takes: a GET endpoint does not answer it (a HEAD of
// /v1/events?follow=1 would otherwise stream to nobody).
func TestRouting(t *testing.T) {
	endpoints := []struct {
		path  string
		allow string // the Allow header a wrong method gets
	}{
		{"/v1/status", "GET"},
		{"/v1/turns", "GET, POST"},
		{"/v1/turns/current/end", "POST"},
		{"/v1/turns/3", "GET"},
		{"/v1/turns/current", "GET"},
		{"/v1/turns/3/steps", "GET"},
		{"/v1/turns/current/steps", "GET, POST"},
		{"/v1/outside", "GET"},
		{"/v1/content?at=1&path=a", "GET"},
		{"/v1/rollback", "POST"},
		{"/v1/unrevert", "POST"},
		{"/v1/markers", "GET"},
		{"/v1/events", "GET"},
		{"/v1/diff?from=1", "GET"},
		{"/v1/journal", "DELETE"},
		{"/v1/shutdown", "POST"},
	}
	for _, e := range endpoints {
		allowed := strings.Split(e.allow, ", ")
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			rec := serve(m, e.path, nil)
			takes := contains(allowed, m)
			switch {
			case takes && (rec.Code == http.StatusMethodNotAllowed || rec.Code == http.StatusNotFound && strings.HasPrefix(errorMessage(t, rec), "no endpoint")):
				t.Errorf("%s %s: %d %s, want it served", m, e.path, rec.Code, rec.Body)
			case !takes && rec.Code != http.StatusMethodNotAllowed:
				t.Errorf("%s %s: %d, want 405", m, e.path, rec.Code)
			case !takes:
				if code := errorCode(t, rec); code != CodeBadRequest {
					t.Errorf("%s %s: code %s, want %s", m, e.path, code, CodeBadRequest)
				}
				if got := rec.Header().Get("Allow"); got != e.allow {
					t.Errorf("%s %s: Allow %q, want %q", m, e.path, got, e.allow)
				}
				path, _, _ := strings.Cut(e.path, "?")
				want := path + " takes " + strings.Join(allowed, " or ") + ", not " + m
				if msg := errorMessage(t, rec); msg != want {
					t.Errorf("%s %s: message %q, want %q", m, e.path, msg, want)
				}
			}
		}
	}
	for _, path := range []string{"/", "/v1", "/v1/", "/v1/nope", "/v2/status", "/v1/turns/3/steps/1", "/v1/turns/current/end/x", "/v1/statusx"} {
		for _, m := range []string{"GET", "HEAD", "POST", "DELETE"} {
			rec := serve(m, path, nil)
			if rec.Code != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404", m, path, rec.Code)
				continue
			}
			if code := errorCode(t, rec); code != CodeNotFound {
				t.Errorf("%s %s: code %s, want %s", m, path, code, CodeNotFound)
			}
			if want := "no endpoint " + m + " " + path; errorMessage(t, rec) != want {
				t.Errorf("%s %s: message %q, want %q", m, path, errorMessage(t, rec), want)
			}
		}
	}
}

func errorMessage(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var eb errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == nil {
		t.Fatalf("status %d with a body that is not an error: %q", rec.Code, rec.Body)
	}
	return eb.Error.Message
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
