package awsemulator

import (
	"crypto/md5" //nolint:gosec // G501: SQS checksums message bodies with MD5; not used for security.
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SQS speaks awsJson1_0 (X-Amz-Target: AmazonSQS.<Operation>) and, being
// query-compatible, names its legacy error code in X-Amzn-Query-Error.
const sqsContentType = "application/x-amz-json-1.0"

func (e *Emulator) serveSQS(w http.ResponseWriter, req *request) *apiError {
	switch req.action {
	case "CreateQueue":
		return e.createQueue(w, req)
	case "GetQueueUrl":
		return e.getQueueURL(w, req)
	case "GetQueueAttributes":
		return e.getQueueAttributes(w, req)
	case "SendMessage":
		return e.sqsSendMessage(w, req)
	case "ReceiveMessage":
		return e.receiveMessage(w, req)
	case "DeleteMessage":
		return e.deleteMessage(w, req)
	case "PurgeQueue":
		return e.purgeQueue(w, req)
	default:
		return &apiError{status: http.StatusBadRequest, code: "UnsupportedOperation", queryCode: "AWS.SimpleQueueService.UnsupportedOperation", message: fmt.Sprintf("%s is not an SQS operation this emulator serves", req.action)}
	}
}

func errQueueDoesNotExist() *apiError {
	return &apiError{status: http.StatusBadRequest, code: "QueueDoesNotExist", queryCode: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist."}
}

func errInvalidParameter(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidParameterValue", message: fmt.Sprintf(format, args...)}
}

func decodeSQS(req *request, v any) *apiError {
	if err := json.Unmarshal(req.body, v); err != nil {
		return errInvalidParameter("malformed request body: %v", err)
	}
	return nil
}

// queueByURL resolves a queue URL of any host: SQS URLs end in /<account>/<name>.
// The caller holds e.mu.
func (e *Emulator) queueByURL(raw string) (*queue, *apiError) {
	if raw == "" {
		return nil, &apiError{status: http.StatusBadRequest, code: "MissingParameter", message: "The request must contain the parameter QueueUrl."}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errInvalidParameter("Value %s for parameter QueueUrl is invalid. Reason: %v", raw, err)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] != e.opts.AccountID {
		return nil, errQueueDoesNotExist()
	}
	q, ok := e.queues[parts[1]]
	if !ok {
		return nil, errQueueDoesNotExist()
	}
	return q, nil
}

func (e *Emulator) createQueue(w http.ResponseWriter, req *request) *apiError {
	var in struct {
		QueueName  string
		Attributes map[string]string
	}
	if aerr := decodeSQS(req, &in); aerr != nil {
		return aerr
	}
	if in.QueueName == "" || strings.ContainsAny(in.QueueName, "/: ") {
		return errInvalidParameter("Value %q for parameter QueueName is invalid.", in.QueueName)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	q, ok := e.queues[in.QueueName]
	if !ok {
		q = e.newQueue(in.QueueName, in.Attributes, now)
	}
	writeJSON(w, sqsContentType, map[string]string{"QueueUrl": q.url})
	return nil
}

func (e *Emulator) getQueueURL(w http.ResponseWriter, req *request) *apiError {
	var in struct {
		QueueName              string
		QueueOwnerAWSAccountId string
	}
	if aerr := decodeSQS(req, &in); aerr != nil {
		return aerr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q, ok := e.queues[in.QueueName]
	if !ok || (in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != e.opts.AccountID) {
		return errQueueDoesNotExist()
	}
	writeJSON(w, sqsContentType, map[string]string{"QueueUrl": q.url})
	return nil
}

func (e *Emulator) getQueueAttributes(w http.ResponseWriter, req *request) *apiError {
	var in struct {
		QueueUrl       string
		AttributeNames []string
	}
	if aerr := decodeSQS(req, &in); aerr != nil {
		return aerr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return aerr
	}
	c := q.counts(now)
	all := map[string]string{
		"QueueArn":                              q.arn,
		"ApproximateNumberOfMessages":           strconv.Itoa(c.visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(c.inFlight),
		"ApproximateNumberOfMessagesDelayed":    strconv.Itoa(c.delayed),
		"CreatedTimestamp":                      strconv.FormatInt(q.created.Unix(), 10),
		"LastModifiedTimestamp":                 strconv.FormatInt(q.created.Unix(), 10),
		"VisibilityTimeout":                     strconv.Itoa(int(q.visibilityTimeout().Seconds())),
		"DelaySeconds":                          strconv.Itoa(int(q.delay().Seconds())),
		"MaximumMessageSize":                    "262144",
		"MessageRetentionPeriod":                "345600",
		"ReceiveMessageWaitTimeSeconds":         "0",
	}
	out := map[string]string{}
	for _, name := range in.AttributeNames {
		if name == "All" {
			out = all
			break
		}
		v, ok := all[name]
		if !ok {
			return &apiError{status: http.StatusBadRequest, code: "InvalidAttributeName", message: fmt.Sprintf("Unknown Attribute %s.", name)}
		}
		out[name] = v
	}
	writeJSON(w, sqsContentType, map[string]any{"Attributes": out})
	return nil
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s)) //nolint:gosec // G401: the SQS protocol's MD5OfMessageBody, as above.
	return hex.EncodeToString(sum[:])
}

func (e *Emulator) sqsSendMessage(w http.ResponseWriter, req *request) *apiError {
	var in struct {
		QueueUrl     string
		MessageBody  string
		DelaySeconds *int
	}
	if aerr := decodeSQS(req, &in); aerr != nil {
		return aerr
	}
	if in.MessageBody == "" {
		return &apiError{status: http.StatusBadRequest, code: "MissingParameter", message: "The request must contain the parameter MessageBody."}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return aerr
	}
	delay := q.delay()
	if in.DelaySeconds != nil {
		if *in.DelaySeconds < 0 || *in.DelaySeconds > 900 {
			return errInvalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900.", *in.DelaySeconds)
		}
		delay = time.Duration(*in.DelaySeconds) * time.Second
	}
	m := e.sendMessage(q, in.MessageBody, delay, now)
	writeJSON(w, sqsContentType, map[string]string{"MessageId": m.id, "MD5OfMessageBody": md5Hex(m.body)})
	return nil
}

func (e *Emulator) receiveMessage(w http.ResponseWriter, req *request) *apiError {
	var in struct {
		QueueUrl            string
		MaxNumberOfMessages *int
		VisibilityTimeout   *int
	}
	if aerr := decodeSQS(req, &in); aerr != nil {
		return aerr
	}
	limit := 1
	if in.MaxNumberOfMessages != nil {
		if *in.MaxNumberOfMessages < 1 || *in.MaxNumberOfMessages > 10 {
			return errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", *in.MaxNumberOfMessages)
		}
		limit = *in.MaxNumberOfMessages
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return aerr
	}
	visibility := q.visibilityTimeout()
	if in.VisibilityTimeout != nil {
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	type jsonMessage struct {
		MessageId     string
		ReceiptHandle string
		MD5OfBody     string
		Body          string
		Attributes    map[string]string
	}
	var out []jsonMessage
	for _, m := range q.messages {
		if len(out) == limit {
			break
		}
		if now.Before(m.visibleAt) {
			continue
		}
		m.receiveCount++
		m.visibleAt = now.Add(visibility)
		m.receiptHandle = fmt.Sprintf("%s#%d", m.id, m.receiveCount)
		out = append(out, jsonMessage{
			MessageId: m.id, ReceiptHandle: m.receiptHandle, MD5OfBody: md5Hex(m.body), Body: m.body,
			Attributes: map[string]string{
				"SentTimestamp":           strconv.FormatInt(m.sent.UnixMilli(), 10),
				"ApproximateReceiveCount": strconv.Itoa(m.receiveCount),
			},
		})
	}
	writeJSON(w, sqsContentType, map[string]any{"Messages": out})
	return nil
}

func (e *Emulator) deleteMessage(w http.ResponseWriter, req *request) *apiError {
	var in struct {
		QueueUrl      string
		ReceiptHandle string
	}
	if aerr := decodeSQS(req, &in); aerr != nil {
		return aerr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return aerr
	}
	i := slices.IndexFunc(q.messages, func(m *message) bool { return m.receiptHandle != "" && m.receiptHandle == in.ReceiptHandle })
	if i < 0 {
		return &apiError{status: http.StatusBadRequest, code: "ReceiptHandleIsInvalid", message: fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", in.ReceiptHandle)}
	}
	q.messages = slices.Delete(q.messages, i, i+1)
	writeJSON(w, sqsContentType, map[string]any{})
	return nil
}

func (e *Emulator) purgeQueue(w http.ResponseWriter, req *request) *apiError {
	var in struct{ QueueUrl string }
	if aerr := decodeSQS(req, &in); aerr != nil {
		return aerr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return aerr
	}
	q.messages = nil
	writeJSON(w, sqsContentType, map[string]any{})
	return nil
}

func writeSQSError(w http.ResponseWriter, _ *request, aerr *apiError) {
	w.Header().Set("Content-Type", sqsContentType)
	w.Header().Set("X-Amzn-Query-Error", aerr.compatibleCode()+";"+aerr.fault())
	w.WriteHeader(aerr.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + aerr.code, "message": aerr.message})
}
