-- One row per account: its open and won pipeline.
select
    a.account_id,
    a.account_name,
    a.region,
    count(o.opportunity_id) as opportunities,
    coalesce(sum(case when o.stage = 'closed won' then o.amount end), 0) as won_amount,
    coalesce(sum(case when o.stage not in ('closed won', 'closed lost') then o.amount end), 0) as open_amount
from {{ ref('stg_accounts') }} a
left join {{ ref('stg_opportunities') }} o on o.account_id = a.account_id
group by a.account_id, a.account_name, a.region
