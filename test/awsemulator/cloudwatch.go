package awsemulator

import (
	"fmt"
	"net/http"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// CloudWatch speaks Smithy RPC v2 CBOR (POST
// /service/GraniteServiceVersion20100801/operation/<Operation>) and, being
// query-compatible, names its legacy error code in X-Amzn-Query-Error.
//
// Metrics are computed from live state rather than stored: a query returns at
// most one datapoint, for the latest period, holding the value now. That is
// what a scaler reading "the most recent datapoint" needs.

var cborEncoding = func() cbor.EncMode {
	m, err := cbor.EncOptions{
		Time:          cbor.TimeUnixDynamic,
		TimeTag:       cbor.EncTagRequired,
		NilContainers: cbor.NilContainerAsEmpty,
	}.EncMode()
	if err != nil {
		panic(fmt.Sprintf("cbor encoding options, %v", err))
	}
	return m
}()

func (e *Emulator) serveCloudWatch(w http.ResponseWriter, req *request) *apiError {
	switch req.action {
	case "GetMetricData":
		return e.getMetricData(w, req)
	default:
		return &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("%s is not a CloudWatch operation this emulator serves", req.action)}
	}
}

type metricDataQuery struct {
	Id         string
	Expression string
	MetricStat *struct {
		Metric struct {
			Namespace  string
			MetricName string
			Dimensions []struct{ Name, Value string }
		}
		Period int32
		Stat   string
	}
	ReturnData *bool
}

type metricDataResult struct {
	Id         string
	Label      string
	Timestamps []time.Time
	Values     []float64
	StatusCode string
}

func (e *Emulator) getMetricData(w http.ResponseWriter, req *request) *apiError {
	var in struct {
		MetricDataQueries []metricDataQuery
		StartTime         time.Time
		EndTime           time.Time
	}
	if err := cbor.Unmarshal(req.body, &in); err != nil {
		return errInvalidParameterValue("malformed CBOR request: %v", err)
	}
	switch {
	case len(in.MetricDataQueries) == 0:
		return errInvalidParameterValue("MetricDataQueries must not be empty")
	case !in.StartTime.Before(in.EndTime):
		return errInvalidParameterValue("The parameter StartTime must be less than the parameter EndTime.")
	}
	e.mu.Lock()
	now := e.advance()
	out := struct {
		MetricDataResults []metricDataResult
		Messages          []struct{}
	}{}
	for _, q := range in.MetricDataQueries {
		if q.MetricStat == nil {
			e.mu.Unlock()
			return errInvalidParameterValue("query %q: only MetricStat queries are supported by the emulator", q.Id)
		}
		if q.MetricStat.Period <= 0 || q.MetricStat.Period%60 != 0 {
			e.mu.Unlock()
			return errInvalidParameterValue("query %q: The parameter Period must be a multiple of 60.", q.Id)
		}
		if q.ReturnData != nil && !*q.ReturnData {
			continue
		}
		result := metricDataResult{Id: q.Id, Label: q.MetricStat.Metric.MetricName, StatusCode: "Complete"}
		if v, ok := e.metricValue(q, now); ok {
			period := time.Duration(q.MetricStat.Period) * time.Second
			at := now
			if in.EndTime.Before(at) {
				at = in.EndTime
			}
			at = at.Truncate(period)
			if !at.Before(in.StartTime) {
				result.Timestamps, result.Values = []time.Time{at}, []float64{v}
			}
		}
		out.MetricDataResults = append(out.MetricDataResults, result)
	}
	e.mu.Unlock()
	b, err := cborEncoding.Marshal(out)
	if err != nil {
		return &apiError{status: http.StatusInternalServerError, code: "InternalFailure", message: err.Error(), server: true}
	}
	writeCBOR(w, http.StatusOK, b)
	return nil
}

// metricValue computes a metric from live state; ok is false when CloudWatch
// would have no data (unknown metric or resource). The caller holds e.mu.
func (e *Emulator) metricValue(q metricDataQuery, now time.Time) (float64, bool) {
	m := q.MetricStat.Metric
	if m.Namespace != "AWS/SQS" || len(m.Dimensions) != 1 || m.Dimensions[0].Name != "QueueName" {
		return 0, false
	}
	queue, ok := e.queues[m.Dimensions[0].Value]
	if !ok {
		return 0, false
	}
	c := queue.counts(now)
	switch m.MetricName {
	case "ApproximateAgeOfOldestMessage":
		return float64(int64(c.oldest.Seconds())), true
	case "ApproximateNumberOfMessagesVisible":
		return float64(c.visible), true
	case "ApproximateNumberOfMessagesNotVisible":
		return float64(c.inFlight), true
	case "ApproximateNumberOfMessagesDelayed":
		return float64(c.delayed), true
	}
	return 0, false
}

func errInvalidParameterValue(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidParameterValue", message: fmt.Sprintf(format, args...)}
}

func writeCBORError(w http.ResponseWriter, _ *request, aerr *apiError) {
	b, err := cborEncoding.Marshal(map[string]string{"__type": "com.amazonaws.cloudwatch#" + aerr.code, "message": aerr.message})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("X-Amzn-Query-Error", aerr.compatibleCode()+";"+aerr.fault())
	writeCBOR(w, aerr.status, b)
}

func writeCBOR(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
