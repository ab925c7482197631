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
	"ReceiveMessage":     (*Emulator).serveReceiveMessage,
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
	WaitTimeSeconds     *int
}

// longPollInterval is how often a long poll looks again for a visible message; a message
// sent or made visible meanwhile is returned at the next look.
const longPollInterval = 20 * time.Millisecond

// serveReceiveMessage is ReceiveMessage with long polling: while the queue has nothing
// visible, the call waits up to WaitTimeSeconds of real time (it holds a connection, as SQS
// does), looking again every longPollInterval.
func (e *Emulator) serveReceiveMessage(w http.ResponseWriter, req *request) *apiError {
	var in receiveMessageInput
	if err := json.Unmarshal(req.body, &in); err != nil {
		return errInvalidParameter("malformed request body: %v", err)
	}
	var wait time.Duration
	if in.WaitTimeSeconds != nil {
		if *in.WaitTimeSeconds < 0 || *in.WaitTimeSeconds > 20 {
			return errInvalidParameter("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *in.WaitTimeSeconds)
		}
		wait = time.Duration(*in.WaitTimeSeconds) * time.Second
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	ticker := time.NewTicker(longPollInterval)
	defer ticker.Stop()
	for {
		e.mu.Lock()
		out, aerr := e.receiveMessage(in, e.advance())
		e.mu.Unlock()
		if aerr != nil {
			return aerr
		}
		if len(out.Messages) > 0 || wait == 0 {
			writeJSON(w, sqsContentType, out)
			return nil
		}
		select {
		case <-req.http.Context().Done():
			return nil
		case <-deadline.C:
			wait = 0
		case <-ticker.C:
		}
	}
}

type receivedMessage struct {
	MessageId     string
	ReceiptHandle string
	MD5OfBody     string
	Body          string
	Attributes    map[string]string
}

type receiveMessageOutput struct {
	Messages []receivedMessage
}

// receiveMessage takes the visible messages; the caller holds e.mu.
func (e *Emulator) receiveMessage(in receiveMessageInput, now time.Time) (receiveMessageOutput, *apiError) {
	limit := 1
	if in.MaxNumberOfMessages != nil {
		if *in.MaxNumberOfMessages < 1 || *in.MaxNumberOfMessages > 10 {
			return receiveMessageOutput{}, errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", *in.MaxNumberOfMessages)
		}
		limit = *in.MaxNumberOfMessages
	}
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return receiveMessageOutput{}, aerr
	}
	visibility := q.visibilityTimeout()
	if in.VisibilityTimeout != nil {
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	var out []receivedMessage
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
		out = append(out, receivedMessage{
			MessageId: m.id, ReceiptHandle: m.receiptHandle, MD5OfBody: md5Hex(m.body), Body: m.body,
			Attributes: map[string]string{
				"SentTimestamp":           strconv.FormatInt(m.sent.UnixMilli(), 10),
				"ApproximateReceiveCount": strconv.Itoa(m.receiveCount),
			},
		})
	}
	return receiveMessageOutput{Messages: out}, nil
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
