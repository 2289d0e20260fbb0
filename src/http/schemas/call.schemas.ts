// The call operations' wire shapes are defined next to the service that takes them.
export { CreateWebCallBody, CustomAttributes, ListCallsBody, UpdateCallBody } from '../../services/call.schemas.ts';
export { CallResponse } from '../../services/call.view.ts';
export { CallStatsQuery, CallStatsResponse } from '../../services/call-stats.schemas.ts';
