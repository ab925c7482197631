package awsemulator

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
)

// The media types of the user data parts the Amazon Linux AMIs act on.
const (
	// NodeadmMediaType marks a part holding a nodeadm NodeConfig (AL2023).
	NodeadmMediaType     = "application/node.eks.aws"
	shellScriptMediaType = "text/x-shellscript"
)

// UserDataPart is a part of a MIME multi-part user data document.
type UserDataPart struct {
	// MediaType is the part's Content-Type without its parameters.
	MediaType string
	Body      string
}

// errNotMultipart is UserDataParts' error for user data that is not a MIME multi-part document
// (Bottlerocket's TOML settings, a bare script).
var errNotMultipart = errors.New("the user data is not a MIME multi-part document")

// UserDataParts are the parts of a MIME multi-part user data document, as an EKS-optimized
// Amazon Linux AMI reads it at boot. The error says when it is not such a document, or names the
// malformed part that ends it, with the parts before it.
func UserDataParts(userData string) ([]UserDataPart, error) {
	message, err := mail.ReadMessage(strings.NewReader(userData))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotMultipart, err)
	}
	mediaType, params, err := mime.ParseMediaType(message.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("%w (%s)", errNotMultipart, mediaType)
	}
	reader := multipart.NewReader(message.Body, params["boundary"])
	var parts []UserDataPart
	for {
		part, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return parts, fmt.Errorf("reading part %d of the user data, %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return parts, fmt.Errorf("reading part %d of the user data, %w", len(parts)+1, err)
		}
		partType, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		parts = append(parts, UserDataPart{MediaType: partType, Body: string(body)})
	}
}
