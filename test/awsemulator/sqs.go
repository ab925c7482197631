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

// sqsOperations are the SQS operations the emulator serves, by action.
var sqsOperations = map[string]func(*Emulator, http.ResponseWriter, *request) *apiError{
	"CreateQueue":        sqsOperation((*Emulator).createQueue),
	"GetQueueUrl":        sqsOperation((*Emulator).getQueueURL),
	"GetQueueAttributes": sqsOperation((*Emulator).getQueueAttributes),
	"SendMessage":        sqsOperation((*Emulator).sqsSendMessage),
	"ReceiveMessage":     sqsOperation((*Emulator).receiveMessage),
	"DeleteMessage":      sqsOperation((*Emulator).deleteMessage),
	"PurgeQueue":         sqsOperation((*Emulator).purgeQueue),
}

func (e *Emulator) serveSQS(w http.ResponseWriter, req *request) *apiError {
	op, ok := sqsOperations[req.action]
	if !ok {
		return &apiError{status: http.StatusBadRequest, code: "UnsupportedOperation", queryCode: "AWS.SimpleQueueService.UnsupportedOperation", message: fmt.Sprintf("%s is not an SQS operation this emulator serves", req.action)}
	}
	return op(e, w, req)
}

func errQueueDoesNotExist() *apiError {
	return &apiError{status: http.StatusBadRequest, code: "QueueDoesNotExist", queryCode: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist."}
}

func errInvalidParameter(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidParameterValue", message: fmt.Sprintf(format, args...)}
}

// sqsOperation serves op: it decodes the request body into In and, holding e.mu, runs op as
// of now and writes what it returns as the JSON response. The operations below run so.
func sqsOperation[In any](op func(e *Emulator, in In, now time.Time) (any, *apiError)) func(*Emulator, http.ResponseWriter, *request) *apiError {
	return func(e *Emulator, w http.ResponseWriter, req *request) *apiError {
		var in In
		if err := json.Unmarshal(req.body, &in); err != nil {
			return errInvalidParameter("malformed request body: %v", err)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		out, aerr := op(e, in, e.advance())
		if aerr != nil {
			return aerr
		}
		writeJSON(w, sqsContentType, out)
		return nil
	}
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

type createQueueInput struct {
	QueueName  string
	Attributes map[string]string
}

func (e *Emulator) createQueue(in createQueueInput, now time.Time) (any, *apiError) {
	if in.QueueName == "" || strings.ContainsAny(in.QueueName, "/: ") {
		return nil, errInvalidParameter("Value %q for parameter QueueName is invalid.", in.QueueName)
	}
	q, ok := e.queues[in.QueueName]
	if !ok {
		q = e.newQueue(in.QueueName, in.Attributes, now)
	}
	return map[string]string{"QueueUrl": q.url}, nil
}

type getQueueURLInput struct {
	QueueName              string
	QueueOwnerAWSAccountId string
}

func (e *Emulator) getQueueURL(in getQueueURLInput, _ time.Time) (any, *apiError) {
	q, ok := e.queues[in.QueueName]
	if !ok || (in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != e.opts.AccountID) {
		return nil, errQueueDoesNotExist()
	}
	return map[string]string{"QueueUrl": q.url}, nil
}

type getQueueAttributesInput struct {
	QueueUrl       string
	AttributeNames []string
}

func (e *Emulator) getQueueAttributes(in getQueueAttributesInput, now time.Time) (any, *apiError) {
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
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
			return nil, &apiError{status: http.StatusBadRequest, code: "InvalidAttributeName", message: fmt.Sprintf("Unknown Attribute %s.", name)}
		}
		out[name] = v
	}
	return map[string]any{"Attributes": out}, nil
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s)) //nolint:gosec // G401: the SQS protocol's MD5OfMessageBody, as above.
	return hex.EncodeToString(sum[:])
}

type sendMessageInput struct {
	QueueUrl     string
	MessageBody  string
	DelaySeconds *int
}

func (e *Emulator) sqsSendMessage(in sendMessageInput, now time.Time) (any, *apiError) {
	if in.MessageBody == "" {
		return nil, &apiError{status: http.StatusBadRequest, code: "MissingParameter", message: "The request must contain the parameter MessageBody."}
	}
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	delay := q.delay()
	if in.DelaySeconds != nil {
		if *in.DelaySeconds < 0 || *in.DelaySeconds > 900 {
			return nil, errInvalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900.", *in.DelaySeconds)
		}
		delay = time.Duration(*in.DelaySeconds) * time.Second
	}
	m := e.sendMessage(q, in.MessageBody, delay, now)
	return map[string]string{"MessageId": m.id, "MD5OfMessageBody": md5Hex(m.body)}, nil
}

type receiveMessageInput struct {
	QueueUrl            string
	MaxNumberOfMessages *int
	VisibilityTimeout   *int
}

func (e *Emulator) receiveMessage(in receiveMessageInput, now time.Time) (any, *apiError) {
	limit := 1
	if in.MaxNumberOfMessages != nil {
		if *in.MaxNumberOfMessages < 1 || *in.MaxNumberOfMessages > 10 {
			return nil, errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", *in.MaxNumberOfMessages)
		}
		limit = *in.MaxNumberOfMessages
	}
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
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
	return map[string]any{"Messages": out}, nil
}

type deleteMessageInput struct {
	QueueUrl      string
	ReceiptHandle string
}

func (e *Emulator) deleteMessage(in deleteMessageInput, _ time.Time) (any, *apiError) {
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	i := slices.IndexFunc(q.messages, func(m *message) bool { return m.receiptHandle != "" && m.receiptHandle == in.ReceiptHandle })
	if i < 0 {
		return nil, &apiError{status: http.StatusBadRequest, code: "ReceiptHandleIsInvalid", message: fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", in.ReceiptHandle)}
	}
	q.messages = slices.Delete(q.messages, i, i+1)
	return map[string]any{}, nil
}

type purgeQueueInput struct{ QueueUrl string }

func (e *Emulator) purgeQueue(in purgeQueueInput, _ time.Time) (any, *apiError) {
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	q.messages = nil
	return map[string]any{}, nil
}

func writeSQSError(w http.ResponseWriter, _ *request, aerr *apiError) {
	w.Header().Set("Content-Type", sqsContentType)
	w.Header().Set("X-Amzn-Query-Error", aerr.compatibleCode()+";"+aerr.fault())
	w.WriteHeader(aerr.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + aerr.code, "message": aerr.message})
}
