/**
 * `edge-redlock/otel`: OpenTelemetry for locks without a dependency on `@opentelemetry/api`. Give
 * {@link otelEvents} your tracer (and a meter) and use what it returns as a Redlock's `onEvent`: a span per
 * acquisition, a histogram of the time spent acquiring, and a counter of contention.
 *
 * @example
 * ```ts
 * import { trace, metrics } from "@opentelemetry/api";
 * import { Redlock } from "edge-redlock";
 * import { otelEvents } from "edge-redlock/otel";
 *
 * const redlock = Redlock.fromEnv(env, {
 *   onEvent: otelEvents(trace.getTracer("checkout"), metrics.getMeter("checkout")),
 * });
 * ```
 * @module
 */
import type { EventHandler, LockEvent } from "../events/types.ts";

/** Attribute values as OpenTelemetry takes them. */
export type OtelAttributes = Record<string, string | number | boolean>;

/**
 * The part of an OpenTelemetry `Span` the adapter uses.
 * @example
 * ```ts
 * const span: OtelSpan = tracer.startSpan("x");
 * ```
 */
export interface OtelSpan {
  /** Marks the span ok (code 1) or failed (code 2). */
  setStatus(status: { code: number; message?: string }): unknown;
  /** Ends the span now. */
  end(): void;
}

/**
 * The part of an OpenTelemetry `Tracer` the adapter uses (`trace.getTracer(name)` fits).
 * @example
 * ```ts
 * const tracer: OtelTracer = trace.getTracer("checkout");
 * ```
 */
export interface OtelTracer {
  /** Starts a span; `startTime` in epoch ms. */
  startSpan(name: string, options?: { startTime?: number; attributes?: OtelAttributes }): OtelSpan;
}

/**
 * The part of an OpenTelemetry `Meter` the adapter uses (`metrics.getMeter(name)` fits).
 * @example
 * ```ts
 * const meter: OtelMeter = metrics.getMeter("checkout");
 * ```
 */
export interface OtelMeter {
  /** A histogram instrument. */
  createHistogram(
    name: string,
    options?: { unit?: string; description?: string },
  ): { record(value: number, attributes?: OtelAttributes): void };
  /** A monotonic counter instrument. */
  createCounter(
    name: string,
    options?: { unit?: string; description?: string },
  ): { add(value: number, attributes?: OtelAttributes): void };
}

/** Options of {@link otelEvents}. */
export interface OtelEventsOptions {
  /**
   * A label for the resources, added as `edge_redlock.resource` to spans and metrics. Resource names are
   * your keys: return a normalised name (`orders:42` → `orders`), or a metric label per key grows without
   * bound. Default: none (only the number of resources is recorded).
   */
  resource?: (resources: readonly string[]) => string | undefined;
}

const OK = 1;
const ERROR = 2;

/**
 * An `onEvent` that records each acquisition as a span `edge-redlock.acquire` (from the call to its
 * outcome; attributes: kind, outcome, failure reason, attempts, number of resources, and the nodes' tally
 * of the last attempt), and, given a meter, the acquisition time in the histogram
 * `edge_redlock.acquire.duration` (ms) and each refused attempt in the counter `edge_redlock.contention`.
 * Typed structurally: `@opentelemetry/api` is your dependency, not this package's.
 * @param tracer an OpenTelemetry tracer
 * @param meter an OpenTelemetry meter (optional)
 * @param options see {@link OtelEventsOptions}
 * @returns a handler for `new Redlock(nodes, { onEvent })`
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * const onEvent = otelEvents(tracer, meter, { resource: ([key]) => key.split(":")[0] });
 * const redlock = new Redlock(nodes, { onEvent });
 * ```
 */
export function otelEvents(tracer: OtelTracer, meter?: OtelMeter, options: OtelEventsOptions = {}): EventHandler {
  const duration = meter?.createHistogram("edge_redlock.acquire.duration", {
    unit: "ms",
    description: "Time from the call to acquire to its outcome",
  });
  const contention = meter?.createCounter("edge_redlock.contention", {
    description: "Attempts refused because another holder had the lock",
  });
  const label = (resources: readonly string[]): OtelAttributes => {
    const name = options.resource?.(resources);
    return name === undefined ? {} : { "edge_redlock.resource": name };
  };
  return (event: LockEvent) => {
    if (event.type === "retry" && event.reason === "held") {
      contention?.add(1, { "edge_redlock.kind": event.kind, ...label(event.resources) });
    }
    if (event.type !== "acquire") return;
    const attributes: OtelAttributes = {
      "edge_redlock.kind": event.kind,
      "edge_redlock.outcome": event.outcome,
      ...label(event.resources),
    };
    duration?.record(event.elapsedMs, attributes);
    if (event.outcome === "failed" && event.reason === "held") contention?.add(1, attributes);
    const span = tracer.startSpan("edge-redlock.acquire", {
      startTime: Date.now() - event.elapsedMs,
      attributes: {
        ...attributes,
        ...(event.reason === undefined ? {} : { "edge_redlock.reason": event.reason }),
        "edge_redlock.attempts": event.attempts,
        "edge_redlock.resources.count": event.resources.length,
        "edge_redlock.nodes.granted": event.tally.granted,
        "edge_redlock.nodes.denied": event.tally.denied,
        "edge_redlock.nodes.errors": event.tally.errors,
      },
    });
    span.setStatus(event.outcome === "held" ? { code: OK } : { code: ERROR, message: event.reason });
    span.end();
  };
}
