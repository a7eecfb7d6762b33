package budget

import "github.com/timebudget/budget/internal/redact"

// RedactError returns err's message with the user info, query string and
// fragment of every URL in it removed, including the URL of every
// [*net/url.Error] in its chain: `Get "http://u:p@svc/x?api_key=1": EOF`
// becomes `Get "http://svc/x": EOF`. A nil err gives "".
//
// Error messages are where secrets leave a process unnoticed: net/http's
// errors quote the whole request URL, API keys and signed query strings
// included. Everything this module shows beyond the process goes through
// the same redaction: the ledger's JSON, httpbudget's debug page,
// Budget-Expired values and public error answers. Use RedactError where
// your own code shows an error to someone outside. It allocates only when
// the message holds a URL, and is safe for concurrent use.
func RedactError(err error) string { return redact.Error(err) }
