# frozen_string_literal: true

# Cloud Controller's half of definition updates (docs/CLOUD_CONTROLLER.md), played against a
# running BBS with the committed Ruby bindings (protocol/pb/*_pb.rb) and a client written as
# CC's lib/diego/client.rb is: desire an app's LRP, update it with a new definition and a
# strategy, watch the rollout through the LRP events, hold one at a manual canary step (CC's
# PAUSED deployment) and cancel it, roll back to the first definition, and meet the errors CC
# meets. Raises (exit status 1) at the first step that does not go as the contract says.
#
#   ruby -I <repository root> compat/ruby/definition_updates.rb \
#     --bbs http://127.0.0.1:8890 --api http://127.0.0.1:8889 --process-guid my-app
#
# --bbs is the BBS-protocol listener; --api the JSON API, read only for the rollout's phase
# while it awaits a promote (the protocol carries no rollout report).

require 'json'
require 'optparse'
require_relative 'diego_client'
require_relative 'lrp_watch'

Models = Diego::Bbs::Models

options = { instances: 3 }
OptionParser.new do |o|
  o.on('--bbs URL') { |v| options[:bbs] = v }
  o.on('--api URL') { |v| options[:api] = v }
  o.on('--process-guid GUID') { |v| options[:guid] = v }
end.parse!
%i[bbs api guid].each { |k| raise ArgumentError, "--#{k.to_s.tr('_', '-')} is required" unless options[k] }
GUID = options[:guid]
INSTANCES = options[:instances]

def step(what)
  started = Time.now
  yield
  puts format('ok   %-70s %5.1f s', what, Time.now - started)
  $stdout.flush
end

# What CC's AppRecipeBuilder#app_lrp_arguments builds for a process, cut to what a process
# cell runs (a sleeping process instead of the buildpack launcher); version changes the
# environment, as a new droplet or env var would.
def app_lrp_arguments(version)
  {
    process_guid: GUID,
    domain: 'cf-apps',
    instances: INSTANCES,
    root_fs: 'preloaded:cflinuxfs4',
    environment_variables: [{ name: 'VCAP_APPLICATION', value: '{"name":"app"}' }, { name: 'VERSION', value: version }],
    action: { run_action: { path: '/bin/sleep', args: ['3600'], user: 'vcap', log_source: 'APP/PROC/WEB' } },
    start_timeout_ms: 60_000,
    disk_mb: 16,
    memory_mb: 16,
    ports: [8080],
    log_source: 'CELL',
    log_guid: GUID,
    metrics_guid: GUID,
    metric_tags: { 'source_id' => { static: GUID } },
    annotation: Time.now.to_f.to_s,
    routes: { routes: { 'cf-router' => JSON.dump([{ hostnames: ["#{GUID}.example.com"], port: 8080 }]) } },
    legacy_download_user: 'vcap',
    trusted_system_certificates_path: '/etc/cf-system-certificates'
  }
end

# The fields of a DesiredLRP that are not its definition: identity, scale and labels.
NOT_DEFINITION = %i[process_guid domain instances routes annotation metric_tags].freeze

# CC's change: the LRPDefinition of the process as it is now, under definition_id.
def definition(version)
  Models::LRPDefinition.new(app_lrp_arguments(version).except(*NOT_DEFINITION).merge(definition_id: version))
end

# CC's build_app_lrp_update plus the definition and the rollout's strategy.
def definition_update(version, strategy)
  args = app_lrp_arguments(version)
  Models::DesiredLRPUpdate.new(instances: args[:instances], annotation: args[:annotation], metric_tags: args[:metric_tags],
                               routes: args[:routes], definition: definition(version), strategy: Models::RolloutStrategy.new(strategy))
end

# BbsAppsClient#handle_diego_errors: an Error in a 200 answer is a RunnerError (or
# RunnerInvalidRequest) to CC.
def no_error!(response, what)
  raise "#{what}: the BBS answered #{response.error.type}: #{response.error.message}" if response.error
end

def error!(response, type, what)
  got = response.error
  raise "#{what}: want a #{type} error, the BBS answered #{got ? "#{got.type}: #{got.message}" : 'no error'}" unless got&.type == type
end

def api_rollout(api)
  uri = URI("#{api}/v1/rollouts/get")
  res = Net::HTTP.post(uri, JSON.dump(process_guid: GUID), 'Content-Type' => 'application/json')
  raise "POST #{uri}: #{res.code} #{res.body}" unless res.code == '200'

  JSON.parse(res.body).fetch('rollout')
end

client = Diego::Client.new(url: options[:bbs])
watch = LRPWatch.new(client, GUID)

step "desire #{GUID} (definition v1, #{INSTANCES} instances)" do
  no_error!(client.desire_lrp(Models::DesiredLRP.new(app_lrp_arguments('v1').merge(definition_id: 'v1'))), 'desire')
  watch.until("#{INSTANCES} instances of v1 running") { |w| w.count('v1', 'RUNNING') == INSTANCES }
  got = client.desired_lrp_by_process_guid(GUID)
  no_error!(got, 'get')
  raise "read back: definition #{got.desired_lrp.definition_id.inspect}" unless got.desired_lrp.definition_id == 'v1'
  raise "read back: ports #{got.desired_lrp.ports.to_a}" unless got.desired_lrp.ports.to_a == [8080]
end

step 'update to v2 with a definition and a strategy (max_in_flight 2)' do
  no_error!(client.update_desired_lrp(GUID, definition_update('v2', max_in_flight: 2)), 'update to v2')
  watch.until('the rollout to v2 started (desired v2, previous v1)') do |w|
    w.desired&.definition_id == 'v2' && w.desired.previous_definition_id == 'v1'
  end
  watch.until('the rollout to v2 completed (previous cleared, every instance v2)') do |w|
    w.desired.previous_definition_id == '' && w.count('v2', 'RUNNING') == INSTANCES && w.count('v1').zero?
  end
  actual = client.actual_lrps_by_process_guid(GUID)
  no_error!(actual, 'actual LRPs')
  defs = actual.actual_lrps.map { |a| a.actual_lrp_key.definition_id }.uniq
  raise "actual LRPs after the rollout run #{defs}" unless defs == ['v2'] && actual.actual_lrps.size == INSTANCES
end

step 'cancel_update with no update in progress: ResourceConflict' do
  error!(client.cancel_update_desired_lrp(GUID), :ResourceConflict, 'cancel with nothing to cancel')
end

step 'an invalid strategy (max_in_flight 0): InvalidRequest, nothing changed' do
  error!(client.update_desired_lrp(GUID, definition_update('v3', max_in_flight: 0)), :InvalidRequest, 'max_in_flight 0')
  got = client.desired_lrp_by_process_guid(GUID).desired_lrp
  raise "after a refused update: #{got.definition_id}/#{got.previous_definition_id}" unless got.definition_id == 'v2' && got.previous_definition_id == ''
end

step 'update to v3 held at a manual canary step (CC: PAUSED), then cancel_update' do
  canary = { canary: { steps: [{ instances: 1, promote: 'manual' }] } }
  no_error!(client.update_desired_lrp(GUID, definition_update('v3', canary)), 'update to v3')
  watch.until('one canary instance of v3 running') { |w| w.count('v3', 'RUNNING') == 1 }
  phase = nil
  40.times do
    phase = api_rollout(options[:api])['phase']
    break if phase == 'awaiting_promotion'

    sleep 0.25
  end
  raise "the rollout to v3 is in phase #{phase.inspect}, want awaiting_promotion" unless phase == 'awaiting_promotion'
  raise "a held canary went on: #{watch.summary}" unless watch.count('v3') == 1

  no_error!(client.cancel_update_desired_lrp(GUID), 'cancel_update')
  watch.until('the cancel walked back to v2 (desired v2, previous v3)') do |w|
    w.desired.definition_id == 'v2' && w.desired.previous_definition_id == 'v3'
  end
  watch.until('the cancel ended (previous cleared, no v3 instance)') do |w|
    w.desired.previous_definition_id == '' && w.count('v3').zero? && w.count('v2', 'RUNNING') == INSTANCES
  end
  state = api_rollout(options[:api])
  raise "the canceled rollout: #{state.slice('state', 'phase')}" unless state['state'] == 'canceled'
end

step 'rollback to v1 (strategy max_in_flight 3)' do
  no_error!(client.rollback_desired_lrp(GUID, 'v1', strategy: { max_in_flight: 3 }), 'rollback')
  watch.until('the rollback started (desired v1, previous v2)') do |w|
    w.desired.definition_id == 'v1' && w.desired.previous_definition_id == 'v2'
  end
  watch.until('the rollback completed (every instance v1)') do |w|
    w.desired.previous_definition_id == '' && w.count('v1', 'RUNNING') == INSTANCES && w.count('v2').zero?
  end
  got = client.desired_lrp_by_process_guid(GUID).desired_lrp
  version = got.environment_variables.find { |e| e.name == 'VERSION' }&.value
  raise "after the rollback: definition #{got.definition_id}, VERSION #{version}" unless got.definition_id == 'v1' && version == 'v1'
end

step 'rollback to a definition never stored: ResourceNotFound' do
  error!(client.rollback_desired_lrp(GUID, 'v9'), :ResourceNotFound, 'rollback to v9')
end

step 'a route the BBS does not serve: ResponseError (404), not retried' do
  started = Time.now
  begin
    client.post_raw('/v1/desired_lrp/no_such_route', { process_guid: GUID }, Models::DesiredLRPByProcessGuidRequest, Models::DesiredLRPResponse)
    raise 'an unserved route answered 200'
  rescue Diego::ResponseError => e
    raise "unserved route: #{e.message}" unless e.message.start_with?('failed with status: 404')
  end
  raise 'a 404 was retried' if Time.now - started > 2
end

step 'remove' do
  no_error!(client.remove_desired_lrp(GUID), 'remove')
  watch.until('desired_lrp_removed and every instance gone') { |w| w.desired.nil? && w.instances.empty? }
end

watch.close
puts 'definition updates: every step passed'
