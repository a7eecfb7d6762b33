package httpclient

import (
	"net/http"
	"net/url"
	"time"
)

func helpers(u string) {
	http.Get(u)                                    // want `http.Get uses http.DefaultClient, which has no timeout`
	http.Head(u)                                   // want `http.Head uses http.DefaultClient`
	http.Post(u, "text/plain", nil)                // want `http.Post uses http.DefaultClient`
	http.PostForm(u, url.Values{})                 // want `http.PostForm uses http.DefaultClient`
	http.DefaultClient.Get(u)                      // want `http.DefaultClient.Get has no timeout`
	(http.DefaultClient).PostForm(u, url.Values{}) // want `http.DefaultClient.PostForm has no timeout`
}

func do(u string) (*http.Response, error) {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req) // want `http.DefaultClient.Do has no timeout and no context deadline is in reach`
}

var shared = &http.Client{} // want `http.Client without Timeout`

func build() *http.Client {
	return &http.Client{Transport: http.DefaultTransport} // want `http.Client without Timeout`
}

func value() http.Client {
	c := http.Client{} // want `http.Client without Timeout`
	c.Transport = http.DefaultTransport
	return c
}

// Near misses: none of these is reported.

var withTimeout = &http.Client{Timeout: 10 * time.Second}

func setLater() *http.Client {
	c := &http.Client{}
	c.Timeout = 5 * time.Second
	return c
}

type myClient struct{ http.Client }

func (c *myClient) Get(u string) {}

func notDefault(c *myClient, u string) { c.Get(u) }
