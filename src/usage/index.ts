// Usage aggregates for GET /v1/usage and the console.
export { parseUsageQuery, type UsageQuery } from './params.js';
export { queryUsage, type UsageReport, type UsageMetrics } from './query.js';
