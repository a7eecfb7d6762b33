# gotest.awk reads `go test -json` and prints what plain `go test` prints: each
# package's result line, build errors, and the whole output of a failed test.
# It appends one line per skipped top-level test ("package test<TAB>reason")
# to the file named by -v skips=FILE, and the counts of top-level tests that
# passed, failed and were skipped to -v counts=FILE, for the closing summary
# of `make test` (see the Makefile's summary target). Each failure is
# appended by name to -v failures=FILE: a failed top-level test as
# "MODULE PACKAGE TEST", a package that failed with no failing test (a build
# error, a panic, a timeout) as "MODULE PACKAGE (package failed)"; the
# operand label=NAME marks the lines of one kind of run (such as "nowork").

# field returns the JSON string value of name on the current line, still
# escaped; go test -json writes one flat object per line.
function field(name,    key, i, s, out, c) {
	key = "\"" name "\":\""
	i = index($0, key)
	if (i == 0) return ""
	s = substr($0, i + length(key))
	out = ""
	while (length(s) > 0) {
		c = substr(s, 1, 1)
		if (c == "\\") { out = out substr(s, 1, 2); s = substr(s, 3); continue }
		if (c == "\"") break
		out = out c
		s = substr(s, 2)
	}
	return out
}

function unescape(s) {
	gsub(/\\n/, "\n", s); gsub(/\\t/, "\t", s); gsub(/\\r/, "\r", s)
	gsub(/\\u003c/, "<", s); gsub(/\\u003e/, ">", s); gsub(/\\u0026/, "\\&", s)
	gsub(/\\"/, "\"", s); gsub(/\\\\/, "\\", s)
	return s
}

function record(what) {
	if (failures == "") return
	print (label != "" ? "[" label "] " : "") (module != "" ? module ": " : "") what >> failures
}

# Lines that are not JSON (the go command's own errors, such as a missing
# go.sum entry) are printed as they are.
!/^\{/ { print; next }

{
	action = field("Action"); pkg = field("Package"); test = field("Test")
	if (action == "fail" && test == "" && !testfailed[pkg]) record(pkg " (package failed: build error, panic or timeout; see above)")
	if (action == "build-output") { printf "%s", unescape(field("Output")); next }
	if (action == "output") {
		out = unescape(field("Output"))
		if (test == "") { if (out != "PASS\n") printf "%s", out; next }
		key = pkg " " test
		if (out !~ /^=== (RUN|PAUSE|CONT|NAME) /) buf[key] = buf[key] out
		if (out ~ /^ +[^ ]+\.go:[0-9]+: /) last[key] = out
		next
	}
	if (test == "" || (action != "pass" && action != "fail" && action != "skip")) next
	key = pkg " " test
	top = index(test, "/") == 0
	if (action == "fail") {
		printf "%s", buf[key]
		if (top) {
			failed++
			testfailed[pkg]++
			record(pkg " " test)
		}
	} else if (action == "pass") {
		if (top) passed++
	} else if (top) {
		skipped++
		reason = last[key]
		sub(/^ +[^ ]+\.go:[0-9]+: /, "", reason); sub(/\n$/, "", reason)
		if (reason == "") reason = "no reason given"
		if (skips != "") print pkg " " test "\t" reason >> skips
	}
	delete buf[key]; delete last[key]
}

END { if (counts != "") printf "%d %d %d\n", passed, failed, skipped >> counts }
