// Package redact removes what may carry secrets (the user info, query
// string and fragment of URLs) from texts and error messages that leave the
// process: the ledger's JSON, httpbudget's debug page, Budget-Expired values.
package redact

import (
	"net/url"
	"strings"
)

// String returns s with the user info, query string and fragment of every
// URL in it removed: "Get "http://u:p@svc/x?api_key=1": EOF" becomes
// "Get "http://svc/x": EOF". A URL is anything of the form scheme://… up to
// the next space, quote or angle bracket. Text without "://" is returned
// as it is, without allocating.
//
// Error messages are where secrets leave a process unnoticed: net/http's
// errors quote the whole request URL, API keys and signed query strings
// included. Everything the module shows beyond the process (the ledger's
// JSON, httpbudget's debug page, Budget-Expired values and public error
// answers) goes through String or Error. It is safe for concurrent use.
func String(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		start := i
		for start > 0 && schemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !urlEnd(s[end]) {
			end++
		}
		b.WriteString(s[:start])
		b.WriteString(redactURL(s[start:end]))
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}

// Error returns err's message with the URLs in it redacted as String
// does, including the URL of every *url.Error in its chain (which may be
// relative, with no scheme for String to find). A nil err gives "".
func Error(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, u := range urlErrors(err, nil) {
		if r := redactURL(u); r != u {
			msg = strings.ReplaceAll(msg, u, r)
		}
	}
	return String(msg)
}

// urlErrors appends the URLs of the *url.Error values in err's chain,
// following both forms of Unwrap, to dst.
func urlErrors(err error, dst []string) []string {
	for depth := 0; err != nil && depth < 64; depth++ {
		if ue, ok := err.(*url.Error); ok && ue != nil {
			dst = append(dst, ue.URL)
		}
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				dst = urlErrors(inner, dst)
			}
			return dst
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return dst
		}
	}
	return dst
}

// redactURL removes the user info, query and fragment of the URL raw.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil && u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" {
			return raw
		}
		u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
		return u.String()
	}
	// Not a URL net/url accepts: cut what could hold a secret by hand.
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		host := rest
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			host = rest[:j]
		}
		if j := strings.LastIndexByte(host, '@'); j >= 0 {
			raw = raw[:i+3] + rest[j+1:]
		}
	}
	return raw
}

func schemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

func urlEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' || c == 0x7f
}
