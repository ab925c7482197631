package aws

import (
	"io"
	"net/http"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
)

// GuardRequestBodies wraps an SDK HTTP client to work around a race between
// net/http and smithy-go. After writing a request body, net/http reads it
// once more to check for extra bytes; on a fast endpoint the response can
// arrive first and smithy-go then closes the body. Its closed body answers
// WriteTo with io.EOF as an error, which net/http takes for a failed write:
// it closes the connection while the response is being read ("use of closed
// network connection"). Hiding WriteTo makes net/http use Read, whose io.EOF
// after close is a clean end of body. The provider guards its own client;
// other SDK users (tools talking to the emulator) can use this.
func GuardRequestBodies(client sdkaws.HTTPClient) sdkaws.HTTPClient {
	return requestBodyGuard{next: client}
}

type requestBodyGuard struct {
	next sdkaws.HTTPClient
}

func (c requestBodyGuard) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = readCloserOnly{req.Body}
	}
	return c.next.Do(req)
}

// readCloserOnly exposes Read and Close, and nothing else, of its body.
type readCloserOnly struct{ io.ReadCloser }
