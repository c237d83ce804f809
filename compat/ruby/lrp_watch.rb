# frozen_string_literal: true

require 'base64'
require 'timeout'
require_relative 'diego_client'

# LRPWatch follows one LRP through the instance event stream (lrp_instances.r1), as a Cloud
# Controller deployment updater would: the desired LRP of the latest desired_lrp_* event (its
# definition_id and previous_definition_id, seed 001) and each instance by definition and
# index (ActualLRPKey.definition_id, seed 000) with its state.
class LRPWatch
  EVENT_TYPES = {
    'desired_lrp_created' => Diego::Bbs::Models::DesiredLRPCreatedEvent,
    'desired_lrp_changed' => Diego::Bbs::Models::DesiredLRPChangedEvent,
    'desired_lrp_removed' => Diego::Bbs::Models::DesiredLRPRemovedEvent,
    'actual_lrp_instance_created' => Diego::Bbs::Models::ActualLRPInstanceCreatedEvent,
    'actual_lrp_instance_changed' => Diego::Bbs::Models::ActualLRPInstanceChangedEvent,
    'actual_lrp_instance_removed' => Diego::Bbs::Models::ActualLRPInstanceRemovedEvent,
    'actual_lrp_crashed' => Diego::Bbs::Models::ActualLRPCrashedEvent
  }.freeze

  Instance = Struct.new(:instance_guid, :state)

  attr_reader :desired, :instances, :log

  # Opens the stream in a thread and returns once the BBS answered it: every change made after
  # this returns is seen.
  def initialize(client, process_guid)
    @process_guid = process_guid
    @queue = Queue.new
    @instances = {}
    @log = []
    opened = Queue.new
    @thread = Thread.new do
      client.each_instance_event(on_open: -> { opened << true }) do |name, data|
        type = EVENT_TYPES[name]
        # An event name we do not know is skipped, as BBS's clients skip it.
        @queue << type.decode(Base64.strict_decode64(data)) if type
        nil
      end
      @queue << :closed
    rescue StandardError => e
      opened << e
      @queue << e
    end
    ok = opened.pop
    raise ok if ok.is_a?(Exception)
  end

  # Consumes events until the block, given the watch, answers true; raises with what it saw
  # past timeout seconds.
  def until(what, timeout: 90)
    deadline = Time.now + timeout
    loop do
      return if yield(self)

      left = deadline - Time.now
      event = next_event(left)
      raise "#{what}: not within #{timeout} s; saw #{summary}; last events:\n  #{@log.last(12).join("\n  ")}" if event.nil?
      raise "#{what}: the event stream ended: #{event}" if event == :closed || event.is_a?(Exception)

      apply(event)
    end
  end

  # The number of instances of definition in state (any state when nil).
  def count(definition, state = nil)
    @instances.count { |(d, _), i| d == definition && (state.nil? || i.state == state) }
  end

  def definitions
    @instances.keys.map(&:first).uniq.sort
  end

  def summary
    per = definitions.map { |d| "#{d}: #{@instances.select { |(k, _), _| k == d }.map { |(_, x), i| "#{x}=#{i.state}" }.sort.join(' ')}" }
    "desired #{@desired&.definition_id.inspect} (previous #{@desired&.previous_definition_id.inspect}); instances {#{per.join('; ')}}"
  end

  def close
    @thread.kill
  end

  private

  # The next event within seconds, or nil (Ruby 3.1's Queue#pop takes no timeout).
  def next_event(seconds)
    return nil unless seconds.positive?

    Timeout.timeout(seconds) { @queue.pop }
  rescue Timeout::Error
    nil
  end

  def apply(event)
    case event
    when Diego::Bbs::Models::DesiredLRPCreatedEvent then desired_is(event.desired_lrp, 'desired_lrp_created')
    when Diego::Bbs::Models::DesiredLRPChangedEvent then desired_is(event.after, 'desired_lrp_changed')
    when Diego::Bbs::Models::DesiredLRPRemovedEvent
      @desired = nil if event.desired_lrp.process_guid == @process_guid
    when Diego::Bbs::Models::ActualLRPInstanceCreatedEvent
      lrp = event.actual_lrp
      instance_is(lrp.actual_lrp_key, lrp.actual_lrp_instance_key.instance_guid, lrp.state, 'created')
    when Diego::Bbs::Models::ActualLRPInstanceChangedEvent
      instance_is(event.actual_lrp_key, event.actual_lrp_instance_key.instance_guid, event.after.state, 'changed')
    when Diego::Bbs::Models::ActualLRPInstanceRemovedEvent
      removed(event.actual_lrp)
    end
  end

  def desired_is(lrp, name)
    return unless lrp.process_guid == @process_guid

    @desired = lrp
    @log << "#{name}: definition #{lrp.definition_id} previous #{lrp.previous_definition_id.inspect} (modification index #{lrp.modification_tag&.index})"
  end

  def instance_is(key, instance_guid, state, name)
    return unless key.process_guid == @process_guid

    @instances[[key.definition_id, key.index]] = Instance.new(instance_guid, state)
    @log << "instance #{name}: #{key.definition_id}/#{key.index} #{state}"
  end

  # BBS reports an instance that went back to UNCLAIMED as its new incarnation created, then
  # the old one removed: only a removal of the incarnation held goes.
  def removed(lrp)
    key = lrp.actual_lrp_key
    return unless key.process_guid == @process_guid

    held = @instances[[key.definition_id, key.index]]
    @instances.delete([key.definition_id, key.index]) if held && held.instance_guid == lrp.actual_lrp_instance_key.instance_guid
    @log << "instance removed: #{key.definition_id}/#{key.index}"
  end
end
