import { CreateWebCallBody as CreateWebCall, ListCallsBody as ListCalls, UpdateCallBody as UpdateCall } from '../../services/call.schemas.ts';
import { named } from './common.schemas.ts';

// The call operations' wire shapes are defined next to the service that takes them; here they are
// named for the OpenAPI document.
export const CreateWebCallBody = named(CreateWebCall, 'CreateWebCallRequest');
export const UpdateCallBody = named(UpdateCall, 'UpdateCallRequest');
export const ListCallsBody = named(ListCalls, 'ListCallsRequest');
export { CustomAttributes } from '../../services/call.schemas.ts';
export { CallResponse } from '../../services/call.view.ts';
export { CallStatsQuery, CallStatsResponse } from '../../services/call-stats.schemas.ts';
