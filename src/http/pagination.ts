import { Type, type TSchema } from 'typebox';

export const MAX_PAGE_SIZE = 1000;
/** Far beyond any real page; keeps the row offset within what the database can count. */
export const MAX_PAGE = 1_000_000_000;

export const PageQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number, from 1.', examples: [1] })),
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: MAX_PAGE_SIZE, examples: [100] })),
});

/** `page` and `page_size` without defaults, for a list that answers everything when neither is given. */
export const OptionalPageQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: 'Page number, from 1 (1 when only page_size is given).', examples: [1] })),
  page_size: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: `Items per page (${MAX_PAGE_SIZE} when only page is given).`, examples: [100] }),
  ),
});

/** The page asked for; the validator has filled in the defaults. */
export function pageRequested(query: { page?: number; page_size?: number }): { page: number; pageSize: number } {
  return { page: query.page ?? 1, pageSize: query.page_size ?? MAX_PAGE_SIZE };
}

/** A page of `item`s; `options` are the page's (its examples, for the API reference). */
export function pageOf<T extends TSchema>(item: T, options: { examples?: unknown[] } = {}) {
  return Type.Object(
    {
      data: Type.Array(item),
      page: Type.Integer(),
      page_size: Type.Integer(),
      total_pages: Type.Integer({ description: 'ceil(total_count / page_size); 0 when nothing matched.' }),
      total_count: Type.Integer(),
    },
    options,
  );
}

export interface PageInfo {
  page: number;
  page_size: number;
  total_pages: number;
  total_count: number;
}

/** The paging fields of an answer holding every match: one page of all of them. */
export function wholeInfo(totalCount: number): PageInfo {
  return { page: 1, page_size: totalCount, total_pages: totalCount > 0 ? 1 : 0, total_count: totalCount };
}

export function pageInfo(page: number, pageSize: number, totalCount: number): PageInfo {
  return { page, page_size: pageSize, total_pages: Math.ceil(totalCount / pageSize), total_count: totalCount };
}
