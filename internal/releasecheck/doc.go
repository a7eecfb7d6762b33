// Command releasecheck installs the tagged release of every budget module as a
// stranger outside the repository would, and fails on whatever would stop
// them.
//
// It reads the releases from .ci/releases (one "tag commit" pair a line; a
// tag present in the clone must point at the commit the file names, and a
// clone without tags still checks the same commits), then:
//
//   - checks the tree: no tracked file over 1 MB, no file name that Go's
//     module zips (or Windows) reject, and no replace directive in any go.mod;
//   - writes a directory module proxy (GOPROXY=file://...) holding every
//     listed version, each zip made from the tagged commit as the public proxy
//     would make it;
//   - in a scratch module outside the repository, with GOWORK=off and that
//     proxy ahead of the usual one, go gets the newest version of every
//     library module, builds a program that imports every public package of
//     them, go installs cmd/budget and cmd/budget-vet, and runs budget --help;
//   - follows README.md's install-from-a-clone block word for word: in a
//     scratch directory holding a fresh clone and a new module beside it,
//     bash runs the block as it stands, and the budget command it installed
//     must run.
//
// With -proxy DIR the proxy is kept in DIR, so that `make test` can test each
// module with GOWORK=off against the released versions it requires.
//
// golang.org/x/mod lives here, in a module of its own, so that neither the
// root module nor any adapter requires it.
package main
